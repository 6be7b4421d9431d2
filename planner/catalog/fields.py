"""The building blocks of the catalogs' records: quantities read from text with their unit into
base units (a bare number for a quantity is refused), bounded counts, ids and free text, and the
base records every entry derives from.
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass
from typing import Annotated, Any, ClassVar

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    TypeAdapter,
    model_validator,
)

from planner.catalog.distributions import FORMS, Distribution
from planner.catalog.distributions import parse as parse_distribution
from planner.model import units

ID_PATTERN = r"^[a-z0-9][a-z0-9._-]*$"


@dataclass(frozen=True)
class Quantity:
    """Reads ``"80 GiB"``-style text of a ``kind`` of quantity into a float in base units."""

    kind: str
    allow_zero: bool
    optional: bool

    def __call__(self, value: Any) -> float | None:
        if value is None and self.optional:
            return None
        number = units.parse(value, self.kind)
        if number < 0 or (number == 0 and not self.allow_zero):
            limit = "zero or more" if self.allow_zero else "greater than zero"
            raise ValueError(f"must be {limit}, got {value!r}")
        return number


def quantity(kind: str, *, allow_zero: bool = False, optional: bool = False) -> BeforeValidator:
    """The validator of a field type that reads ``"80 GiB"``-style text into a float in base units.

    ``optional`` lets an explicit null through (the field's default is then None); it makes a
    separate type, ``Annotated[float | None, ...]``, so that a required quantity (``Annotated[float,
    ...]``) never accepts null.
    """
    return BeforeValidator(Quantity(kind, allow_zero, optional))


Bytes = Annotated[float, quantity("bytes")]

OptionalBytes = Annotated[float | None, quantity("bytes", optional=True)]

BytesOrZero = Annotated[float, quantity("bytes", allow_zero=True)]

Bandwidth = Annotated[float, quantity("bandwidth")]

OptionalBandwidth = Annotated[float | None, quantity("bandwidth", optional=True)]

Compute = Annotated[float, quantity("compute")]

OptionalPower = Annotated[float | None, quantity("power", optional=True)]

Seconds = Annotated[float, quantity("time", allow_zero=True)]

OptionalSeconds = Annotated[float | None, quantity("time", allow_zero=True, optional=True)]

OptionalRate = Annotated[float | None, quantity("rate", optional=True)]

#: Largest whole number a catalog may give (tokens, parameters, layers...): 10¹⁵, far past any
#: model or workload, and well inside a float's exact integers.
MAX_COUNT = 10**15

Count = Annotated[int, Field(strict=True, gt=0, le=MAX_COUNT)]

#: Most length samples written inline in a catalog (a CSV file has no count limit).
MAX_SAMPLES = 1_000_000

CountOrZero = Annotated[int, Field(strict=True, ge=0, le=MAX_COUNT)]

Positive = Annotated[float, Field(strict=True, gt=0)]

Fraction = Annotated[float, Field(strict=True, gt=0, le=1)]

Money = Annotated[float, Field(strict=True, ge=0)]

#: Ids that a CSV reader (pandas, a spreadsheet) or YAML would take for a missing value or a
#: truth value rather than a name.
RESERVED_IDS = frozenset(
    {"nan", "null", "none", "na", "nat", "inf", "true", "false", "yes", "no", "on", "off"}
)


def _not_reserved(value: str) -> str:
    if value in RESERVED_IDS:
        raise ValueError(
            f"{value!r} cannot be an id: spreadsheets and CSV readers take it for a missing or "
            "true/false value; choose a name"
        )
    return value


def printable(value: str) -> str:
    """``value`` unchanged; refused where it holds a control character (a tab, a line break)."""
    bad = next((c for c in value if unicodedata.category(c) == "Cc"), None)
    if bad is not None:
        raise ValueError(
            f"holds the control character U+{ord(bad):04X} at position {value.index(bad) + 1}; "
            "text must be printable (no tabs, line breaks or other control characters)"
        )
    return value


Id = Annotated[
    str, Field(strict=True, pattern=ID_PATTERN, max_length=100), AfterValidator(_not_reserved)
]

#: Free text (names, sources): at most 500 printable characters.
Text = Annotated[str, Field(strict=True, max_length=500), AfterValidator(printable)]


class Record(BaseModel):
    """Base of every catalog entry: unknown fields are errors, records are immutable."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


class Uncertain(Record):
    """A record some of whose quantities may be given as distributions
    (:mod:`planner.catalog.distributions`).

    ``UNCERTAIN`` names those fields and the largest value each may take (1 for a fraction).
    The field holds the central value, which the plan uses; ``uncertain`` holds each
    distribution in base units, which ``planner run --draws`` samples. A catalog never writes
    ``uncertain`` itself.
    """

    UNCERTAIN: ClassVar[dict[str, float]] = {}
    #: Fields whose mappings may mean something else (a length's samples or summary describe
    #: the spread of requests, not doubt about the catalog): only ``{low, mode, high}`` is read
    #: as a distribution there.
    RANGES_ONLY: ClassVar[frozenset[str]] = frozenset()

    uncertain: dict[str, Distribution] = Field(default_factory=dict, exclude=True, repr=False)

    @model_validator(mode="before")
    @classmethod
    def _distributions(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        if "uncertain" in data:
            raise ValueError("'uncertain' is not a catalog field: write a distribution in place")
        found: dict[str, Distribution] = {}
        data = dict(data)
        for name, upper in cls.UNCERTAIN.items():
            value = data.get(name)
            if not isinstance(value, dict):
                continue
            if name in cls.RANGES_ONLY and FORMS.get(frozenset(value)) != "triangular":
                continue
            field = cls.model_fields[name]
            kind: Any = field.annotation
            if field.metadata:
                kind = Annotated[kind, *field.metadata]
            adapter: TypeAdapter[Any] = TypeAdapter(kind)
            try:
                distribution = parse_distribution(value, adapter.validate_python, upper)
            except Exception as error:  # the field's own message, or the distribution's
                raise ValueError(f"{name}: {_first_error(error)}") from None
            data[name] = _central_as_written(value, distribution)
            found[name] = distribution
        if found:
            data["uncertain"] = found
        return data


def _central_as_written(value: dict[str, Any], distribution: Distribution) -> Any:
    """The central value as the catalog wrote it (with its unit), for the field to read."""
    if distribution.form == "triangular":
        return value["mode"]
    if distribution.form == "normal":
        return value["mean"]
    return value["samples"][distribution.samples.index(distribution.central)]


def _first_error(error: Exception) -> str:
    """The message of a validation error without pydantic's framing."""
    errors = getattr(error, "errors", None)
    if callable(errors):
        first = errors()[0]
        return str(first.get("msg", error)).removeprefix("Value error, ")
    return str(error)


class Entry(Record):
    id: Id
    name: Text | None = None
    source: Text | None = None

    @property
    def label(self) -> str:
        return self.name or self.id
