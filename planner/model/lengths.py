"""Token lengths as a distribution (:class:`Lengths`): a fixed count, samples drawn with
replacement, a lognormal fitted to a mean and a 95th percentile, or a geometric; its median and
its draws.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

_Z95 = 1.6448536269514722
"""Standard normal quantile at 0.95 [-]."""


def _lognormal_sigma(mean: float, p95: float) -> float:
    """Log-space sigma of a lognormal with the given mean and 95th percentile [-].

    From ``ln mean = mu + sigma^2/2`` and ``ln p95 = mu + z sigma``:
    ``sigma^2/2 - z sigma + ln(p95/mean) = 0``; the smaller root is taken.  If
    p95/mean exceeds what a lognormal can reach (``exp(z^2/2)`` ~ 3.87) the
    closest value, ``sigma = z``, is used.
    """
    r = math.log(p95 / mean)
    disc = _Z95 * _Z95 - 2.0 * r
    if disc <= 0.0:
        return _Z95
    return _Z95 - math.sqrt(disc)


@dataclass(frozen=True)
class Lengths:
    """A distribution of token counts (prompt or output lengths).

    Build it with :meth:`fixed`, :meth:`samples` (empirical, drawn uniformly
    with replacement), :meth:`from_summary` (lognormal fitted to mean and p95,
    clipped at max) or :meth:`geometric` (memoryless, mean given).
    """

    kind: Literal["fixed", "samples", "lognormal", "geometric"]
    value: int = 0
    values: tuple[int, ...] = ()
    mu: float = 0.0
    sigma: float = 0.0
    mean_tokens: float = 0.0
    max_tokens: int | None = None

    @classmethod
    def fixed(cls, n: int) -> Lengths:
        """Always n tokens."""
        if n < 1:
            raise ValueError("length must be >= 1")
        return cls(kind="fixed", value=int(n))

    @classmethod
    def samples(cls, values: Sequence[int]) -> Lengths:
        """Empirical distribution: draws uniformly, with replacement, from ``values``."""
        vals = tuple(int(v) for v in values)
        if not vals or min(vals) < 1:
            raise ValueError("need at least one sample, all >= 1")
        return cls(kind="samples", values=vals)

    @classmethod
    def from_summary(cls, mean: float, p95: float, max: int) -> Lengths:
        """Lognormal with the given (unclipped) mean and p95, clipped at ``max``.

        ``sigma`` from :func:`_lognormal_sigma`, ``mu = ln(mean) - sigma^2/2``.
        Draws are rounded to integers and clipped to ``[1, max]``, so the
        realised mean is slightly below ``mean`` when ``max`` cuts the tail.
        """
        if not 0 < mean <= p95 <= max:
            raise ValueError("need 0 < mean <= p95 <= max")
        sigma = _lognormal_sigma(mean, p95)
        mu = math.log(mean) - sigma * sigma / 2.0
        return cls(kind="lognormal", mu=mu, sigma=sigma, max_tokens=int(max))

    @classmethod
    def geometric(cls, mean: float, max: int | None = None) -> Lengths:
        """Geometric on {1, 2, ...} with the given mean (p = 1/mean), optional clip.

        The discrete analogue of an exponential; with a constant step time it
        makes service times (nearly) exponential.
        """
        if mean < 1:
            raise ValueError("mean must be >= 1")
        return cls(kind="geometric", mean_tokens=float(mean), max_tokens=max)

    def median_tokens(self) -> float:
        """The median length [tokens]: the count itself, the samples' median (an observed
        value), ``exp(mu)`` for the lognormal and ``ceil(ln 2 / -ln(1 - p))`` for the
        geometric, each clipped to ``[1, max]`` as draws are."""
        if self.kind == "fixed":
            median = float(self.value)
        elif self.kind == "samples":
            median = float(np.percentile(self.values, 50, method="inverted_cdf"))
        elif self.kind == "lognormal":
            median = math.exp(self.mu)
        else:
            p = 1.0 / self.mean_tokens
            median = math.ceil(math.log(2.0) / -math.log1p(-p)) if p < 1 else 1.0
        hi = self.max_tokens if self.max_tokens is not None else math.inf
        return float(min(max(median, 1.0), hi))

    def draw(self, rng: np.random.Generator, n: int) -> np.ndarray:
        """n token counts (int64, >= 1)."""
        if self.kind == "fixed":
            out = np.full(n, self.value, dtype=np.int64)
        elif self.kind == "samples":
            out = rng.choice(np.asarray(self.values, dtype=np.int64), size=n)
        elif self.kind == "lognormal":
            out = np.rint(rng.lognormal(self.mu, self.sigma, size=n)).astype(np.int64)
        else:
            out = rng.geometric(1.0 / self.mean_tokens, size=n).astype(np.int64)
        hi = self.max_tokens if self.max_tokens is not None else np.iinfo(np.int64).max
        return np.clip(out, 1, hi)
