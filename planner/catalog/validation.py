"""Validation errors in planner's words, each located in its file: the entry (its ``id``, or its
position when it has none), the field, the line, and what was expected and what arrived.

pydantic reports a value no branch of a union accepts once per branch, and a record stops at
the first distribution it cannot read; the errors are regrouped here so that each fault is told
once, where it is.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from pydantic import BaseModel, ValidationError
from pydantic_core import ErrorDetails

import planner.catalog.records as records
from planner.catalog.distributions import DistributionError
from planner.catalog.fields import ID_PATTERN, MAX_SAMPLES
from planner.catalog.problems import EXPECTED_KINDS, KIND_ERRORS, Problem, plain_message, shown
from planner.catalog.yamlsafe import Document


def _entry_label(section: str, data: Any, index: int) -> str:
    try:
        entry_id = data[section][index]["id"]
        if isinstance(entry_id, str):
            return f"{section} '{entry_id}'"
    except (KeyError, IndexError, TypeError):
        pass
    return f"{section}[{index}]"


def validation_message(error: ErrorDetails, model: type[BaseModel] | None = None) -> str:
    """One validation error in planner's words (:func:`plain_message`), with what only the
    catalog knows: the fields a record allows, what an id may hold, where long samples go."""
    kind = error["type"]
    if kind == "extra_forbidden":
        allowed = ", ".join(n for n in (model.model_fields if model else ()) if n != "uncertain")
        return f"unknown field; expected one of: {allowed}"
    message = plain_message(error)
    if kind == "too_long" and error["loc"] and error["loc"][-1] == "samples":
        return (
            f"{message}: at most {MAX_SAMPLES:,} samples are written inline; put a longer list "
            "in a CSV file beside the catalog ({file: lengths.csv, column: tokens}), which has "
            "no count limit"
        )
    if kind == "string_pattern_mismatch" and (error.get("ctx") or {}).get("pattern") == ID_PATTERN:
        return (
            f"{message}: an id is lower-case letters, digits, '.', '_' and '-', starting with a "
            "letter or digit"
        )
    return message


def _model_at(schema: type[BaseModel], loc: tuple[Any, ...]) -> type[BaseModel] | None:
    """The record class that owns the last field of ``loc`` (for listing its valid fields)."""
    current: Any = schema
    owner = schema
    for part in loc[:-1]:
        if isinstance(part, int):
            continue
        info = getattr(current, "model_fields", {}).get(part)
        if info is None:
            return owner
        annotation = info.annotation
        for candidate in _walk_types(annotation):
            if isinstance(candidate, type) and issubclass(candidate, BaseModel):
                current = owner = candidate
                break
    return owner


def _walk_types(annotation: Any) -> Iterable[Any]:
    yield annotation
    for arg in getattr(annotation, "__args__", ()) or ():
        yield from _walk_types(arg)


def _branch_tag(part: Any) -> bool:
    """A part of an error's location that names a validator or a branch of a union
    (``function-after[...]``, ``constrained-int``), not a field: field names have no ``-``."""
    return isinstance(part, str) and ("-" in part or part.startswith("function"))


def _first_tag(loc: tuple[Any, ...]) -> int | None:
    return next((i for i, part in enumerate(loc) if _branch_tag(part)), None)


def _kind_only(error: ErrorDetails, depth: int) -> bool:
    """An error of a union's branch that says only that the value is not of the branch's
    kind (a number where a mapping is, a mapping where a number is), at the branch itself."""
    return error["type"] in KIND_ERRORS and len(error["loc"]) == depth + 1


def _expected_kind(error: ErrorDetails) -> str:
    """What a union branch expected, in words: a record's mapping names its fields."""
    ctx = error.get("ctx") or {}
    record = getattr(records, str(ctx.get("class_name")), None)
    if error["type"] == "model_type" and isinstance(record, type):
        names = [n for n in getattr(record, "model_fields", {}) if n != "uncertain"]
        return f"a mapping of {', '.join(names)}"
    if error["type"] == "literal_error":
        return f"one of {ctx.get('expected')}"
    return EXPECTED_KINDS.get(error["type"], "another value")


def _union_errors(errors: list[ErrorDetails]) -> list[ErrorDetails]:
    """The errors worth showing of a value that no branch of a union accepts: those of the
    branches the value was meant for (a mapping's own faults, a number's bound), and when it
    suits no branch at all, one error saying every kind that would have been accepted."""
    groups: dict[tuple[Any, ...], list[ErrorDetails]] = {}
    for error in errors:
        tag = _first_tag(error["loc"])
        if tag is not None:
            groups.setdefault(tuple(error["loc"][:tag]), []).append(error)
    dropped: set[int] = set()
    combined: dict[int, ErrorDetails] = {}
    for prefix, members in groups.items():
        depth = len(prefix)
        branches = {e["loc"][depth] for e in members}
        if len(branches) < 2:
            continue
        mismatched = {
            b
            for b in branches
            if all(_kind_only(e, depth) for e in members if e["loc"][depth] == b)
        }
        if mismatched != branches:
            dropped |= {id(e) for e in members if e["loc"][depth] in mismatched}
            continue
        kinds = " or ".join(dict.fromkeys(_expected_kind(e) for e in members))
        first = members[0]
        ctx = {"error": ValueError(f"expected {kinds}, got {shown(first.get('input'))}")}
        combined[id(first)] = ErrorDetails(
            type="value_error", loc=prefix, msg="", input=first.get("input"), ctx=ctx
        )
        dropped |= {id(e) for e in members}
    out = []
    for error in errors:
        if id(error) in combined:
            out.append(combined[id(error)])
        elif id(error) not in dropped:
            out.append(error)
    return out


def _distribution_fault(
    error: ErrorDetails, schema: type[BaseModel], loc: tuple[Any, ...]
) -> tuple[str, tuple[Any, ...], str] | None:
    """A distribution's fault, for an error a record raised about one of its uncertain fields
    (the record names the field first, ``mode: ...`` follows): the field, the location down to
    the key of the distribution at fault, and the message."""
    if error["type"] != "value_error":
        return None
    raised = (error.get("ctx") or {}).get("error")
    cause = getattr(raised, "__context__", None)
    if not isinstance(cause, DistributionError):
        return None
    name = str(raised).split(": ", 1)[0]
    record = _model_at(schema, (*loc, name))
    if record is None or name not in record.model_fields:
        return None
    return name, (*loc, name, *cause.key), cause.message


def _located(
    errors: list[ErrorDetails], schema: type[BaseModel], prefix: tuple[Any, ...] = ()
) -> list[tuple[tuple[Any, ...], str]]:
    """Each error's location (from the file's top) and message in planner's words.

    A record stops at the first distribution it cannot read, so its other fields go unread:
    the record is read again without that field, until every fault is found.
    """
    found = []
    for error in _union_errors(errors):
        loc = prefix + tuple(p for p in error["loc"] if not _branch_tag(p))
        fault = _distribution_fault(error, schema, loc)
        if fault is None:
            found.append((loc, validation_message(error, _model_at(schema, loc))))
            continue
        name, where, message = fault
        found.append((where, message))
        record = _model_at(schema, (*loc, name))
        data = error.get("input")
        if record is None or not isinstance(data, dict):
            continue
        rest = {k: v for k, v in data.items() if k != name}
        try:
            record.model_validate(rest)
        except ValidationError as again:
            others = [e for e in again.errors() if e["loc"] != (name,)]
            found.extend(_located(others, schema, loc))
    return found


def problems_from_validation(
    name: str, doc: Document, schema: type[BaseModel], exc: ValidationError
) -> list[Problem]:
    problems = []
    for loc, message in _located(exc.errors(), schema):
        entry = None
        field_path: list[str] = []
        if len(loc) >= 2 and isinstance(loc[1], int):
            entry = _entry_label(str(loc[0]), doc.data, loc[1])
            field_path = [str(p) for p in loc[2:]]
        elif loc:
            field_path = [str(p) for p in loc]
        problems.append(
            Problem(
                file=name,
                message=message,
                line=doc.line_of(loc),
                entry=entry,
                field=".".join(field_path) or None,
            )
        )
    return problems
