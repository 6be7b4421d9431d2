"""How a weight matrix multiplication's achieved rate grows with the tokens it multiplies, by
accelerator family: its plateau, as a share of the dense datasheet rate, and the tokens at which
it reaches half of it.

Measured GEMM sweeps of LLM-shaped weights fit time = 2 × N × K × (M + M½) ÷ plateau rate to
within 5 % from M = 256 up, M being the tokens: the achieved rate is the plateau × M ÷ (M + M½),
so a step runs its matrices as if M½ more tokens went through them at the plateau (tiles and
waves of the kernel only partly filled). Below about 256 tokens the same multiplications are
bound by reading their weights, which the roofline's memory term already counts.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

#: The accelerator families a hardware entry may name (``family``).
Family = Literal["hopper", "blackwell", "ampere", "ada", "cdna3", "gaudi3"]


@dataclass(frozen=True)
class MatmulCurve:
    """A family's half-rate tokens M½ [tokens] and plateau [fraction of the dense datasheet
    rate], with their source."""

    half_tokens: float
    plateau_fraction: float
    source: str


HOPPER = MatmulCurve(
    120.0,
    0.80,
    "H100 SXM BF16, torch (cuBLAS) GEMM sweeps fitted by least squares: M½ = 124–145 at "
    "N 2,112 × K 7,168, M 512–8,192 (vLLM PR #23280); 118 at N 6,144 × K 4,096 and 87 at "
    "N 43,008 × K 5,376, M 256, at the plateau (vLLM PRs #17126, #49363); plateau 794.5 of "
    "989 TFLOPS (stas00/ml-engineering's MAMF table; the sweeps reach 700–718)",
)

BLACKWELL = MatmulCurve(
    55.0,
    0.62,
    "B200 BF16, torch (cuBLAS) GEMM sweeps fitted by least squares: M½ = 43–58 at N 6,144 × "
    "K 4,096, M 256–16,384 (vLLM PR #20646), 53 at N 4,096 × K 4,096 (vLLM PR #19566); plateau "
    "1,389–1,398 of 2,250 TFLOPS on those shapes (the MAMF table's best shape reaches 1,745)",
)

_NO_SWEEP = "M½ assumed equal to Hopper's (no public GEMM sweep at hand); plateau: "

#: Each family's curve. Ampere, Ada, CDNA 3 and Gaudi 3 have a measured plateau but no public
#: sweep over M at hand: their M½ is Hopper's, stated as an assumption, until measured.
CURVES: dict[str, MatmulCurve] = {
    "hopper": HOPPER,
    "blackwell": BLACKWELL,
    "ampere": MatmulCurve(
        HOPPER.half_tokens, 0.87, _NO_SWEEP + "A100 SXM 271.2 of 312 TFLOPS (MAMF table)"
    ),
    "ada": MatmulCurve(
        HOPPER.half_tokens,
        0.74,
        _NO_SWEEP + "L40S 269.15 of 362 TFLOPS, square GEMMs "
        "(zzc0721/torch-performance-test-data issue #43)",
    ),
    "cdna3": MatmulCurve(
        HOPPER.half_tokens,
        0.51,
        _NO_SWEEP + "MI300X 668.4 of 1,307 TFLOPS, hipBLASLt tuned (MAMF table)",
    ),
    "gaudi3": MatmulCurve(
        HOPPER.half_tokens, 0.74, _NO_SWEEP + "Gaudi 3 1,243 of 1,677 TFLOPS (MAMF table)"
    ),
}

#: The curve of a hardware entry naming no family: none, so the estimate stays the roofline's
#: bound (a curve measured on one device says little of another's ratio of arithmetic to
#: bandwidth: where that is low, a step of a few tokens would be made compute-bound by it).
NO_CURVE = MatmulCurve(
    0.0, 1.0, "no family named: the roofline, every multiplication at its plateau"
)


def matmul_curve(family: str | None) -> MatmulCurve:
    """The curve of an accelerator ``family`` (:data:`NO_CURVE` when none is named)."""
    return NO_CURVE if family is None else CURVES[family]
