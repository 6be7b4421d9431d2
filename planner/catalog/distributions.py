"""Uncertain quantities: a catalog figure given as a distribution instead of one value.

A planner's inputs are estimates (an efficiency not yet measured, a traffic forecast, a price
not yet quoted). Where a catalog gives one as a distribution, the plan uses its central value,
and ``planner run --draws N`` evaluates the plan over N draws of every uncertain input at once
(:mod:`planner.plan.uncertainty`). Three forms, written in the field's own units:

- triangular ``{low, mode, high}``: a range and its most likely value (the central value is the
  mode, the value a planner would have written alone);
- normal ``{mean, sd}``: drawn within mean ± 3 sd (so that a draw is always a valid value: an
  efficiency above 1 or a negative price would be nonsense), central value the mean;
- samples ``{samples: [...]}``: values observed or quoted, drawn with equal weight, central value
  their median.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from pydantic import ValidationError

from planner.catalog.problems import plain_message, shown

#: How many standard deviations a normal draw may stray from its mean.
NORMAL_TRUNCATION_SD = 3.0

#: The keys of each form, as a catalog writes them.
FORMS = {
    frozenset({"low", "mode", "high"}): "triangular",
    frozenset({"mean", "sd"}): "normal",
    frozenset({"samples"}): "samples",
}

EXPECTED = "a value, or a distribution: {low, mode, high}, {mean, sd} or {samples: [...]}"


class DistributionError(ValueError):
    """A distribution that cannot be read, in planner's words; ``key`` is where inside it the
    fault lies (``("mode",)``, ``("samples", 2)``; empty for the distribution as a whole), so
    that a catalog problem can point at that line."""

    def __init__(self, message: str, key: tuple[str | int, ...] = ()):
        where = ".".join(str(k) for k in key)
        super().__init__(f"{where}: {message}" if where else message)
        self.message = message
        self.key = key


def _value(read: Callable[[Any], float], value: Any, *key: str | int) -> float:
    """One value of a distribution read by the field's own parser; its complaint (a
    validation error) becomes a :class:`DistributionError` at ``key``."""
    try:
        return read(value)
    except ValidationError as error:
        raise DistributionError(plain_message(error.errors()[0]), key) from None
    except ValueError as error:
        raise DistributionError(str(error), key) from None


@dataclass(frozen=True)
class Distribution:
    """An uncertain quantity in base units: its form and parameters."""

    form: str
    low: float
    high: float
    central: float
    sd: float = 0.0
    samples: tuple[float, ...] = ()

    def draw(self, rng: np.random.Generator, n: int) -> np.ndarray:
        """``n`` independent draws [the quantity's base unit]."""
        if self.form == "triangular":
            if self.high == self.low:
                return np.full(n, self.central)
            return rng.triangular(self.low, self.central, self.high, n)
        if self.form == "normal":
            return np.clip(rng.normal(self.central, self.sd, n), self.low, self.high)
        return rng.choice(np.asarray(self.samples, dtype=float), n)

    def describe(self) -> str:
        """The distribution in words and base units, e.g. ``triangular 0.6 / 0.8 / 0.9``."""
        if self.form == "triangular":
            return f"triangular {self.low:g} / {self.central:g} / {self.high:g}"
        if self.form == "normal":
            return f"normal {self.central:g} ± {self.sd:g} (within 3 sd)"
        return f"{len(self.samples)} samples, median {self.central:g}"


def triangular_quantile(low: float, mode: float, high: float, p: float) -> float:
    """Inverse of the triangular distribution's CDF at ``p`` [the quantity's unit]:
    low + √(p (high − low)(mode − low)) below the mode's share (mode − low) ÷ (high − low),
    high − √((1 − p)(high − low)(high − mode)) above it."""
    if high == low:
        return low
    if p < (mode - low) / (high - low):
        return low + float(np.sqrt(p * (high - low) * (mode - low)))
    return high - float(np.sqrt((1 - p) * (high - low) * (high - mode)))


def parse(
    value: dict[str, Any], read: Callable[[Any], float], upper: float = float("inf")
) -> Distribution:
    """A distribution from its catalog form, each value read by ``read`` (the field's own
    parser: units, range). Every uncertain quantity is at least 0, and at most ``upper`` (1 for
    a fraction): a normal distribution must lie inside that within 3 sd, so that every draw is a
    value the field accepts."""
    form = FORMS.get(frozenset(value))
    if form is None:
        keys = ", ".join(sorted(str(k) for k in value)) or "none"
        raise DistributionError(f"expected {EXPECTED}; got the keys: {keys}")
    if form == "triangular":
        low, mode, high = (_value(read, value[k], k) for k in ("low", "mode", "high"))
        if not low <= mode <= high:
            raise DistributionError(
                f"a triangular distribution needs low ≤ mode ≤ high, got {low:g}, {mode:g}, "
                f"{high:g}"
            )
        return Distribution("triangular", low, high, mode)
    if form == "normal":
        mean, sd = _value(read, value["mean"], "mean"), _spread(read, value["sd"])
        low = mean - NORMAL_TRUNCATION_SD * sd
        high = mean + NORMAL_TRUNCATION_SD * sd
        if low < 0 or high > upper:
            limit = f"between 0 and {upper:g}" if upper < float("inf") else "at least 0"
            raise DistributionError(
                f"a normal distribution is drawn within mean ± 3 sd = {low:g} … {high:g}, "
                f"which must be {limit}: give a smaller sd or a triangular range"
            )
        return Distribution("normal", low, high, mean, sd=sd)
    samples = value["samples"]
    if not isinstance(samples, list) or not samples:
        raise DistributionError(
            f"samples must be a non-empty list of values, got {shown(samples)}", ("samples",)
        )
    if len(samples) > MAX_SAMPLES:
        raise DistributionError(
            f"at most {MAX_SAMPLES:,} samples inline, got {len(samples):,}", ("samples",)
        )
    values = tuple(_value(read, s, "samples", i) for i, s in enumerate(samples))
    median = float(np.quantile(np.asarray(values), 0.5, method="inverted_cdf"))
    return Distribution("samples", min(values), max(values), median, samples=values)


#: Most values a catalog may list inline as samples of one quantity.
MAX_SAMPLES = 100_000


def _spread(read: Callable[[Any], float], sd: Any) -> float:
    """A standard deviation in base units: written as the field is (``0.5 ms`` for a time, a
    plain number for a fraction or a price); zero is allowed where the field refuses it."""
    if sd == 0 or sd == "0":
        return 0.0
    return _value(read, sd, "sd")
