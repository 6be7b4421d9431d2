"""What a catalog check reports: a :class:`Problem` located by file, line, entry and field, and
the errors that carry them.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass


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
