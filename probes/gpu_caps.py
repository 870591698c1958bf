"""What a GPU model can do for training, from its compute capability and name: Tensor Cores, TF32, bf16, FP8.
NVML reports the capability; the one exception it does not tell apart is Turing's GTX 16 series (TU116/TU117):
compute capability 7.5 like the RTX 20 series, but no Tensor Cores."""

from __future__ import annotations

import msgspec


class GpuCaps(msgspec.Struct, frozen=True):
    tensor_cores: bool
    tf32: bool  # Ampere (8.0) and newer
    bf16: bool  # Ampere (8.0) and newer
    fp8: bool  # Ada (8.9) and Hopper (9.0) and newer
    generation: str


GENERATIONS = ((9, 0, "Hopper or newer"), (8, 9, "Ada Lovelace"), (8, 0, "Ampere"), (7, 5, "Turing"),
               (7, 0, "Volta"), (6, 0, "Pascal"), (5, 0, "Maxwell"), (0, 0, "older than Maxwell"))


def capabilities(name: str | None, capability: tuple[int, int] | None) -> GpuCaps | None:
    if capability is None:
        return None
    generation = next(label for major, minor, label in GENERATIONS if capability >= (major, minor))
    gtx16 = "GTX 16" in (name or "").upper()
    return GpuCaps(tensor_cores=capability >= (7, 0) and not gtx16, tf32=capability >= (8, 0),
                   bf16=capability >= (8, 0), fp8=capability >= (8, 9), generation=generation)
