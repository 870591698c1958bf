"""How tangled the product's functions may be, by radon's cyclomatic complexity (the branches a reader follows): a
function past LIMIT is refused, and at most MOST_OVER may be past OVER. Only the product's rooms are read (tests and
benchmarks are not held to it). Where a function must grow past OVER, split what it decides from what it says."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from radon.complexity import cc_visit
from radon.visitors import Function

from tests.import_names import ROOMS

ROOT = Path(__file__).resolve().parents[2]
LIMIT = 30  # no function past this: the house's aim
OVER = 20
MOST_OVER = 20  # functions past OVER: the house's aim


def _functions(path: Path) -> Iterator[tuple[int, str]]:
    """Each function and method of the module (radon lists methods as functions beside their class; a closure counts
    in the function around it)."""
    for block in cc_visit(path.read_text(encoding="utf-8")):
        if isinstance(block, Function):
            name = f"{block.classname}.{block.name}" if block.classname else block.name
            yield block.complexity, f"{path.relative_to(ROOT)}:{block.lineno} {name}"


def complexities() -> list[tuple[int, str]]:
    out = []
    for room in ROOMS:
        for path in sorted((ROOT / room).rglob("*.py")):
            out.extend(_functions(path))
    return sorted(out, reverse=True)


@pytest.mark.slow  # over the fast suite's minute on two cores (--durations)
def test_no_function_is_past_the_limit_and_few_are_past_over() -> None:
    found = complexities()
    assert len(found) > 1000  # every room was read
    past = [f"{name}: {value}" for value, name in found if value > LIMIT]
    assert not past, f"past {LIMIT}: {past}"
    over = [f"{name}: {value}" for value, name in found if value > OVER]
    assert len(over) <= MOST_OVER, f"{len(over)} functions past {OVER} (at most {MOST_OVER}): {over}"
