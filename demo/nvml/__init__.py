"""A fake of the NVML C library for the real nvidia-ml-py: see library.py."""

from __future__ import annotations

import time
from collections.abc import Callable

from hwtop.demo.nvml.library import FakeNvmlLibrary


def demo_library(spec: str, seed: int = 0, clock: Callable[[], float] = time.monotonic) -> FakeNvmlLibrary:
    """The fake library of a `--demo` spec (`profile` or `profile:variant`), its driver variant set up."""
    from hwtop.demo.variants import split

    profile, variant = split(spec)
    library = FakeNvmlLibrary(profile, seed=seed, clock=clock)
    if variant is not None and variant.setup is not None:
        variant.setup(library)
    return library


__all__ = ["FakeNvmlLibrary", "demo_library"]
