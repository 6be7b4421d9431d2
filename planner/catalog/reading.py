"""Reading one catalog file (its bytes, their SHA-256, its YAML, its duplicate ids) and
pointing a problem at an entry of it.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from planner.catalog.problems import Problem
from planner.catalog.safefile import FileProblem, read_regular
from planner.catalog.yamlsafe import Document, YamlProblem, load


def read_document(path: Path, display: str) -> tuple[Document | None, str | None, list[Problem]]:
    try:
        raw = read_regular(path)
    except FileProblem as exc:
        return None, None, [Problem(display, str(exc))]
    digest = hashlib.sha256(raw).hexdigest()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return None, digest, [Problem(display, "is not UTF-8 text")]
    try:
        doc = load(text)
    except YamlProblem as exc:
        return None, digest, [Problem(display, exc.message, line=exc.line)]
    except ValueError as exc:  # a date YAML recognises that no calendar has (2024-13-45)
        line, value = _bad_date(text)
        message = f"{value!r} is written as a date but is not one ({exc})" if value else str(exc)
        return None, digest, [Problem(display, f"invalid YAML: {message}", line=line)]
    if doc.data is None:
        return None, digest, [Problem(display, "the file is empty")]
    return doc, digest, []


def _bad_date(text: str) -> tuple[int | None, str | None]:
    """The line and text of the first scalar YAML reads as a date (``2024-13-45``) that is no
    date; (None, None) when there is none."""
    import yaml

    stack = [yaml.compose(text, Loader=yaml.SafeLoader)]
    while stack:
        node = stack.pop(0)
        if isinstance(node, yaml.ScalarNode) and node.tag.endswith(":timestamp"):
            try:
                yaml.SafeLoader("").construct_yaml_timestamp(node)
            except ValueError:
                return node.start_mark.line + 1, node.value
        elif isinstance(node, yaml.MappingNode):
            stack.extend(v for pair in node.value for v in pair)
        elif isinstance(node, yaml.SequenceNode):
            stack.extend(node.value)
    return None, None


def duplicate_ids(name: str, doc: Document, section: str) -> list[Problem]:
    seen: dict[str, int] = {}
    problems = []
    for i, item in enumerate(doc.data.get(section) or []):
        entry_id = item.get("id") if isinstance(item, dict) else None
        if not isinstance(entry_id, str):
            continue
        if entry_id in seen:
            problems.append(
                Problem(
                    name,
                    f"duplicate id {entry_id!r} (first used by entry {seen[entry_id]})",
                    line=doc.line_of((section, i, "id")),
                    entry=f"{section} '{entry_id}'",
                    field="id",
                )
            )
        else:
            seen[entry_id] = i
    return problems


def display_path(folder: Path, stem: str) -> str:
    return str(folder / f"{stem}.yaml")


def problem_at(
    folder: Path,
    docs: dict[str, Document],
    section: str,
    index: int,
    entry_id: str,
    field: str,
    message: str,
    *path: str | int,
) -> Problem:
    """A problem with entry ``index`` of ``section``, at ``field`` (or the deeper ``path``)."""
    where = path or tuple(field.split("."))
    return Problem(
        display_path(folder, section),
        message,
        line=docs[section].line_of((section, index, *where)),
        entry=f"{section} '{entry_id}'",
        field=field,
    )
