"""A test over a matrix of stories, profiles or sizes: a few of its cases run in the fast suite, the rest with the
slow ones (`.ci/run` step 2, `pytest -m slow`), so the fast suite stays under a minute on two cores while CI still
runs every case."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import pytest


def fast_few(values: Iterable[Any], fast: Callable[[Any], bool], arguments: int = 1) -> list[Any]:
    """`values` as parameters, those for which `fast` says no marked slow; `arguments` > 1: each value is a tuple
    of that many, one per argument name."""
    return [value if fast(value) else pytest.param(*(value if arguments > 1 else (value,)), marks=pytest.mark.slow)
            for value in values]
