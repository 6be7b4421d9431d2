"""The catalog reference generated from the records (:mod:`planner.catalog.records`): every
catalog file and the fields of its records, with type, unit kind, default and meaning (the
field's ``#:`` or trailing comment, else the workbook column or sheet that restates it).
"""

from __future__ import annotations

import ast
import datetime as dt
import inspect
import io
import textwrap
import tokenize
import types
import typing
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

from planner.outputs.markdown import GENERATED_NOTE, PIPE, escape, markdown_of_docstring
from planner.plan.sweep import Results


@dataclass(frozen=True)
class FieldDoc:
    """What the code says of one field of a catalog record."""

    name: str
    type: str
    default: str
    meaning: str
    group: str = ""  # a plain comment heading this field and the ones after it
    origin: str = ""  # where the meaning comes from: "record", "workbook", or "" (none)


def _constraints(meta: Any) -> Iterator[str]:
    """The bounds a field's metadata sets, as a reader writes them (``> 0``, ``≤ 100 chars``)."""
    if isinstance(meta, FieldInfo):
        for inner in meta.metadata:
            yield from _constraints(inner)
        return
    for attr, sign in (("gt", ">"), ("ge", "≥"), ("lt", "<"), ("le", "≤")):
        value = getattr(meta, attr, None)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            shown = f"{value:g}" if isinstance(value, float) else _whole(value)
            yield f"{sign} {shown}"
    if getattr(meta, "max_length", None) is not None:
        yield f"at most {meta.max_length:,} long"
    if getattr(meta, "min_length", None):
        yield f"at least {meta.min_length:,} long"


def _whole(value: int) -> str:
    """A bound as people write it: ``300,000``, and ``10¹⁵`` for a large power of ten."""
    digits = len(str(value)) - 1
    if value >= 10**9 and value == 10**digits:
        return "10" + str(digits).translate(str.maketrans("0123456789", "⁰¹²³⁴⁵⁶⁷⁸⁹"))
    return f"{value:,}"


def _quantity_kind(meta: Any) -> str | None:
    from planner.catalog.fields import Quantity

    parser = getattr(meta, "func", None)
    return parser.kind if isinstance(parser, Quantity) else None


def _split_annotated(tp: Any) -> tuple[Any, list[Any]]:
    if typing.get_origin(tp) is typing.Annotated:
        base, *meta = typing.get_args(tp)
        inner, more = _split_annotated(base)
        return inner, [*more, *meta]
    return tp, []


def describe_type(tp: Any, meta: list[Any] | None = None) -> str:
    """A field type in words: ``bytes quantity``, ``whole number > 0``, ``list of id``..."""
    tp, inner = _split_annotated(tp)
    meta = [*inner, *(meta or [])]
    kinds = [k for k in map(_quantity_kind, meta) if k]
    if kinds:
        return f"{kinds[0]} quantity"
    bounds = ", ".join(c for m in meta for c in _constraints(m))
    composite = _composite(tp, meta, bounds)
    if composite is not None:
        return composite
    return _plain(tp, meta, bounds)


def _composite(tp: Any, meta: list[Any], bounds: str) -> str | None:
    """A union, choice, list, mapping or record type in words; None for any other type."""
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        parts = [a for a in typing.get_args(tp) if a is not type(None)]
        return " or ".join(describe_type(a, meta if len(parts) == 1 else None) for a in parts)
    if origin is Literal:
        return "one of " + ", ".join(f"`{a}`" for a in typing.get_args(tp))
    if origin is list:
        (item,) = typing.get_args(tp)
        return f"list of {describe_type(item)}" + (f" ({bounds})" if bounds else "")
    if origin is dict:
        key, value = typing.get_args(tp)
        return f"mapping of {describe_type(key)} to {describe_type(value)}"
    if isinstance(tp, type) and issubclass(tp, BaseModel):
        return f"[{tp.__name__}](#{tp.__name__.lower()})"
    return None


def _patterns(meta: list[Any]) -> list[Any]:
    """The text patterns a field's metadata sets, its own and its fields' inner ones."""
    inner = [x for m in meta if isinstance(m, FieldInfo) for x in m.metadata]
    return [getattr(m, "pattern", None) for m in [*meta, *inner] if getattr(m, "pattern", None)]


def _plain(tp: Any, meta: list[Any], bounds: str) -> str:
    """A scalar type in words, with its bounds: ``whole number > 0``, ``id``, ``text``..."""
    from planner.catalog.records import ID_PATTERN

    patterns = _patterns(meta)
    word = {
        bool: "true or false",
        int: "whole number",
        float: "number",
        str: "text",
        dt.date: "date (YYYY-MM-DD)",
    }.get(tp, getattr(tp, "__name__", str(tp)))
    if tp is str and ID_PATTERN in patterns:
        return "id"
    if tp is str and patterns:
        word = f"text matching `{patterns[0]}`"
    return (
        f"{word} {bounds}".strip()
        if bounds and tp is not str
        else (f"{word} ({bounds})" if bounds else word)
    )


def _default(info: FieldInfo, kind: str | None) -> str:
    from planner.model.units import BASE_UNIT

    if info.is_required():
        return "required"
    value = info.default_factory() if info.default is PydanticUndefined else info.default  # type: ignore[call-arg, misc]
    if value is None:
        return "none"
    if isinstance(value, BaseModel):
        return "none" if not value.model_dump(exclude_none=True, exclude_defaults=True) else "…"
    if isinstance(value, bool):
        return f"`{str(value).lower()}`"
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if kind:
        return f"`{value} {BASE_UNIT[kind]}`"
    return f"`{value}`" if value != [] and value != {} else "none"


def _comments(record: type[BaseModel]) -> tuple[dict[str, str], dict[str, str]]:
    """Each field's own comment (``#:`` lines above it, else a trailing ``#`` comment on its
    lines) and the plain comment heading the group it opens, read from the class's source."""
    try:
        source = textwrap.dedent(inspect.getsource(record))
    except (OSError, TypeError):  # pragma: no cover - a record defined outside a file
        return {}, {}
    lines = source.split("\n")
    trailing: dict[int, str] = {}
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type == tokenize.COMMENT and lines[tok.start[0] - 1].strip() != tok.string:
            trailing[tok.start[0]] = tok.string.lstrip("#").strip()
    own: dict[str, str] = {}
    groups: dict[str, str] = {}
    (cls,) = ast.parse(source).body
    assert isinstance(cls, ast.ClassDef)
    for node in cls.body:
        if not (isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name)):
            continue
        name = node.target.id
        above = _comments_above(lines, node.lineno - 2)
        documented = [c[2:].strip() for c in above if c.startswith("#:")]
        plain = [c[1:].strip() for c in above if not c.startswith("#:")]
        ends = node.end_lineno or node.lineno
        after = [trailing[n] for n in range(node.lineno, ends + 1) if n in trailing]
        meaning = " ".join(documented) or " ".join(after)
        if meaning:
            own[name] = meaning
        if plain:
            groups[name] = " ".join(plain)
    return own, groups


def _comments_above(lines: list[str], row: int) -> list[str]:
    """The comment lines right above ``row`` (0-based, counting up), in source order."""
    above: list[str] = []
    while row >= 0 and lines[row].strip().startswith("#"):
        above.insert(0, lines[row].strip())
        row -= 1
    return above


def _own_comments(record: type[BaseModel]) -> tuple[dict[str, str], dict[str, str]]:
    """:func:`_comments` over the record and its bases, the record's own winning."""
    own: dict[str, str] = {}
    groups: dict[str, str] = {}
    for base in reversed(record.__mro__):
        if isinstance(base, type) and issubclass(base, BaseModel) and base is not BaseModel:
            mine, heads = _comments(base)
            own.update(mine)
            groups.update(heads)
    return own, groups


#: The workbook sheet whose columns restate each record's fields, where the record has no word
#: of its own for a field (``None``: the Assumptions sheet's named cells).
SHEET_OF_RECORD: dict[str, str | None] = {
    "Hardware": "Hardware",
    "Price": "Hardware",
    "Model": "Models",
    "MoEBlock": "Models",
    "MLABlock": "Models",
    "SlidingWindowBlock": "Models",
    "Precision": "Precisions",
    "Workload": "Workloads",
    "Assumptions": None,
    "Engine": None,
}

#: Endings of a workbook column that restate a quantity field in a unit people read.
_UNIT_ENDINGS = ("gib", "mib", "gb_s", "w", "kw", "ms", "us", "s", "bytes")


def _sheet_meanings(record: type[BaseModel], results: Results | None) -> dict[str, str]:
    """Each field of ``record`` that a workbook column restates: that column's description,
    naming the column. A column matches its field by name, by name and a unit ending (only
    for a quantity), by name and ``_fraction``, or as ``assumed_`` and the field's name."""
    if results is None or record.__name__ not in SHEET_OF_RECORD:
        return {}
    sheet = SHEET_OF_RECORD[record.__name__]
    if sheet is None:
        from planner.plan.assumptions import GLOBALS

        columns = [(g.cell, g.description) for g in GLOBALS]
        where = "the Assumptions sheet's"
    else:
        columns = [(c.name, c.description) for c in results.inputs.columns.get(sheet, [])]
        where = f"the {sheet} sheet's"
    found: dict[str, str] = {}
    for name, info in record.model_fields.items():
        quantity = any(
            map(_quantity_kind, [*info.metadata, *_split_annotated_any(info.annotation)])
        )
        endings = [*(_UNIT_ENDINGS if quantity else ()), "fraction"]
        names = [name, *(f"{name}_{e}" for e in endings)]
        names += [f"assumed_{n}" for n in names]
        match = next(((c, d) for c, d in columns if c in names and d), None)
        if match:
            found[name] = f"{match[1][0].upper()}{match[1][1:]} ({where} `{match[0]}`)"
    return found


def _field_docs(record: type[BaseModel], results: Results | None = None) -> list[FieldDoc]:
    own, groups = _own_comments(record)
    sheet = _sheet_meanings(record, results)
    uncertain: dict[str, float] = getattr(record, "UNCERTAIN", {})
    ranges: frozenset[str] = getattr(record, "RANGES_ONLY", frozenset())
    docs = []
    for name, info in record.model_fields.items():
        if info.exclude:  # computed by planner, never written in a catalog
            continue
        kinds = [k for k in map(_quantity_kind, info.metadata) if k]
        if info.annotation is not None:
            kinds += [k for k in map(_quantity_kind, _split_annotated_any(info.annotation)) if k]
        kind = kinds[0] if kinds else None
        meaning = info.description or own.get(name, "") or sheet.get(name, "")
        origin = "record" if info.description or name in own else "workbook" if meaning else ""
        if name in uncertain:
            note = "a range `{low, mode, high}`" if name in ranges else "a distribution"
            meaning = f"{meaning} (may be {note}: see *Uncertain inputs*)".strip()
        docs.append(
            FieldDoc(
                name,
                describe_type(info.annotation, list(info.metadata)),
                _default(info, kind),
                meaning,
                groups.get(name, ""),
                origin,
            )
        )
    return docs


def _split_annotated_any(tp: Any) -> list[Any]:
    """The metadata of every Annotated inside ``tp`` (an Optional's, a union's)."""
    _, meta = _split_annotated(tp)
    for arg in typing.get_args(tp) if typing.get_origin(tp) is not typing.Annotated else ():
        meta += _split_annotated_any(arg)
    return meta


def _nested(record: type[BaseModel]) -> Iterator[type[BaseModel]]:
    """The records a record's fields hold, depth first, each once."""

    def walk(tp: Any) -> Iterator[type[BaseModel]]:
        if isinstance(tp, type) and issubclass(tp, BaseModel):
            yield tp
        for arg in typing.get_args(tp):
            yield from walk(arg)

    for info in record.model_fields.values():
        if not info.exclude:
            yield from walk(info.annotation)


def catalog_files() -> list[tuple[str, type[BaseModel], bool]]:
    """Each catalog file: its path in a catalog folder, its record, and whether it is required."""
    from planner.catalog.records import CATALOG_FILES, SCHEMAS
    from planner.measure import INDEX, MeasurementsFile

    files = [(f"{stem}.yaml", schema, stem in CATALOG_FILES) for stem, schema in SCHEMAS.items()]
    return [*files, (f"measurements/{INDEX}", MeasurementsFile, False)]


def field_gaps(results: Results | None = None) -> dict[str, str]:
    """``Record.field`` → ``workbook`` or ``none`` for every catalog field whose record gives no
    meaning (no description, ``#:`` or trailing comment): what a maintainer should document.
    ``workbook``: the page borrows the description of the workbook column that restates it."""
    return {
        f"{record.__name__}.{f.name}": f.origin or "none"
        for record in _catalog_records()
        for f in _field_docs(record, results)
        if f.origin != "record"
    }


def _catalog_records() -> list[type[BaseModel]]:
    seen: list[type[BaseModel]] = []
    for _, schema, _ in catalog_files():
        for record in _nested(schema):
            for found in [record, *_deep(record)]:
                if found not in seen:
                    seen.append(found)
    return seen


def _deep(record: type[BaseModel]) -> Iterator[type[BaseModel]]:
    for inner in _nested(record):
        yield inner
        yield from _deep(inner)


def _record_section(record: type[BaseModel], results: Results | None) -> list[str]:
    doc = inspect.getdoc(record) or ""
    inherited = doc and any(doc == inspect.getdoc(b) for b in record.__mro__[1:])
    out = [f"### {record.__name__} {{#{record.__name__.lower()}}}", ""]
    if doc and not inherited:
        out += [markdown_of_docstring(doc), ""]
    header = ["| field | type | default | meaning |", "| --- | --- | --- | --- |"]
    fields = _field_docs(record, results)
    for i, f in enumerate(fields):
        if f.group:  # a plain comment opens a group of fields: a table of its own
            out += ([""] if i else []) + [f"*{escape(f.group[0].upper() + f.group[1:])}*", ""]
            out += header
        elif i == 0:
            out += header
        meaning = escape(markdown_of_docstring(f.meaning)).replace("|", PIPE) or "\u2014"
        out.append(f"| `{f.name}` | {f.type.replace('|', PIPE)} | {f.default} | {meaning} |")
    return [*out, ""]


def units_markdown() -> str:
    """The units a quantity of each kind may be written in, and the base unit it is read into."""
    from planner.model.units import BASE_UNIT, UNITS

    lines = ["| kind | written as | read into |", "| --- | --- | --- |"]
    for kind, names in UNITS.items():
        lines.append(f"| {kind} | {', '.join(f'`{n}`' for n in names)} | {BASE_UNIT[kind]} |")
    return "\n".join(lines)


def catalog_markdown(results: Results | None = None) -> str:
    """The page of every catalog file: the records it holds and every field of each."""
    out = [
        GENERATED_NOTE,
        "",
        "# Catalog reference",
        "",
        "Every file a catalog folder may hold, the records in it and every field of each, read",
        "from the records that validate them. A *quantity* is written with its unit, and a bare",
        "number for one is refused:",
        "",
        units_markdown(),
        "",
        "Defaults of quantities are shown in the base unit. A field whose meaning reads "
        "\u201c\u2014\u201d is explained in the [catalog guide](../catalogs.md).",
        "",
    ]
    shown: set[type[BaseModel]] = set()
    for path, schema, required in catalog_files():
        out += [f"## `{path}`", ""]
        out += ["Required." if required else "Optional.", ""]
        ((key, info),) = schema.model_fields.items()
        out += [
            f"Top-level key `{key}`: {describe_type(info.annotation, list(info.metadata))}.",
            "",
        ]
        for record in _nested(schema):
            for found in [record, *_deep(record)]:
                if found not in shown:
                    shown.add(found)
                    out += _record_section(found, results)
    return "\n".join(out).rstrip() + "\n"
