"""What a catalog check reports: a :class:`Problem` located by file, line, entry and field, and
the errors that carry them; and :func:`plain_message`, which says a validation error in
planner's words (what the field expected, what arrived), never in the validation library's.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from pydantic_core import ErrorDetails


@dataclass(frozen=True)
class Problem:
    """One thing wrong with a catalog, located as precisely as the input allows."""

    file: str
    message: str
    line: int | None = None
    entry: str | None = None
    field: str | None = None

    def __str__(self) -> str:
        where = self.file + (f":{self.line}" if self.line else "")
        what = []
        if self.entry:
            what.append(self.entry)
        if self.field:
            what.append(f"field '{self.field}'")
        return f"{where}: {' '.join(what) + ': ' if what else ''}{self.message}"


class UnknownEntry(KeyError):
    """An id that no entry of its catalog section has; the message lists the valid ones."""

    def __str__(self) -> str:
        return str(self.args[0])


class CatalogError(Exception):
    """Raised with every problem found in a catalog folder."""

    def __init__(self, problems: Iterable[Problem]):
        self.problems = list(problems)
        super().__init__("\n".join(str(p) for p in self.problems))


#: Longest part of an offending value a message repeats.
SHOWN_CHARACTERS = 60


def shown(value: Any) -> str:
    """A value as an error message shows it: its repr, cut short when long (with its length)."""
    try:
        text = repr(value)
    except ValueError:  # an integer past Python's conversion limit of 4,300 digits
        return f"a number of more than {sys.get_int_max_str_digits():,} digits"
    if len(text) <= SHOWN_CHARACTERS:
        return text
    length = len(value) if isinstance(value, str) else len(text)
    return f"{text[:SHOWN_CHARACTERS]}… ({length:,} characters)"


#: What a field expected, by the kind of value the validation library found it was not.
EXPECTED_KINDS = {
    "int_type": "a whole number (an integer)",
    "int_parsing": "a whole number (an integer)",
    "int_from_float": "a whole number (an integer)",
    "float_type": "a number",
    "float_parsing": "a number",
    "string_type": "text",
    "string_unicode": "text",
    "bool_type": "true or false",
    "bool_parsing": "true or false",
    "dict_type": "a mapping ({key: value, ...})",
    "model_type": "a mapping of fields ({field: value, ...})",
    "model_attributes_type": "a mapping of fields ({field: value, ...})",
    "dataclass_type": "a mapping of fields ({field: value, ...})",
    "list_type": "a list ([a, b, ...])",
    "tuple_type": "a list ([a, b, ...])",
    "set_type": "a list ([a, b, ...])",
    "date_type": "a date (YYYY-MM-DD)",
    "date_parsing": "a date (YYYY-MM-DD)",
    "date_from_datetime_parsing": "a date (YYYY-MM-DD)",
    "date_from_datetime_inexact": "a date (YYYY-MM-DD) without a time",
    "none_required": "nothing (null)",
}

#: The comparisons a bound makes, in words, by the error's type and its context key.
BOUNDS = {
    "greater_than": ("gt", "greater than"),
    "greater_than_equal": ("ge", "greater than or equal to"),
    "less_than": ("lt", "less than"),
    "less_than_equal": ("le", "less than or equal to"),
    "multiple_of": ("multiple_of", "a multiple of"),
}

#: The limits on a length, by the error's type: its context key, the words, what is counted.
LENGTHS = {
    "too_short": ("min_length", "at least", "item"),
    "too_long": ("max_length", "at most", "item"),
    "string_too_short": ("min_length", "at least", "character"),
    "string_too_long": ("max_length", "at most", "character"),
}

#: Errors that say only that a value was of the wrong kind (a union branch it was not meant for).
KIND_ERRORS = frozenset(EXPECTED_KINDS) | {"literal_error", "enum"}


def _count(n: Any, one: str) -> str:
    """``n`` things, ``one`` of them named in the singular: ``1 item``, ``24 items``."""
    return f"{n:,} {one}" + ("" if n == 1 else "s")


def plain_message(error: ErrorDetails) -> str:
    """The message of one validation error in planner's words: what the field expected and
    what arrived, with none of the validation library's own wording (its type names, its
    ``Input should be`` phrasing, its links)."""
    kind = error["type"]
    ctx: dict[str, Any] = dict(error.get("ctx") or {})
    got = shown(error.get("input"))
    if kind == "missing":
        return "required field is missing"
    if kind == "extra_forbidden":
        return "unknown field"
    if kind in ("value_error", "assertion_error"):
        cause = ctx.get("error")
        return str(cause) if cause is not None else error["msg"].split(", ", 1)[-1]
    if kind in EXPECTED_KINDS:
        return f"expected {EXPECTED_KINDS[kind]}, got {got}"
    if kind == "finite_number":
        return f"must be a finite number, got {got}"
    if kind in BOUNDS:
        key, words = BOUNDS[kind]
        return f"must be {words} {ctx.get(key)}, got {got}"
    if kind in LENGTHS:
        key, words, unit = LENGTHS[kind]
        if unit == "item":  # a list: how many it held
            return f"must hold {words} {_count(ctx.get(key), unit)}, got {ctx.get('actual_length')}"
        return f"must be {words} {_count(ctx.get(key), unit)} long, got {got}"
    if kind == "string_pattern_mismatch":
        return f"must match the pattern {ctx.get('pattern')}, got {got}"
    if kind in ("literal_error", "enum"):
        return f"expected one of {ctx.get('expected')}, got {got}"
    # A kind not met so far: the library's sentence, rephrased as planner's.
    message = str(error["msg"]).replace("Input should be", "expected").replace("Input", "the value")
    return f"{message}, got {got}"
