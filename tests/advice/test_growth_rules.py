"""memory-growing on the shapes measured (issue 54): start-up settling watched from the job's first training step
stays quiet; a leak read as a staircase of late PSS readings (a loaded box) holds on every tick once named, never
"clearing" while it climbs."""

from __future__ import annotations

import random

from msgspec.structs import replace

from hwtop.advice.engine import AdviceEngine
from hwtop.demo.profiles import GIB, MIB
from tests.advice.test_job_rules import BALANCED
from tests.advice_timeline import Timeline, ids


def settling(second: float) -> float:
    """benchmarks/advice_memory.py on list_dataset.py --numpy: +200 MiB over its first 10 s of training, then
    within a few MiB for the minute after."""
    return 2 * GIB + 200 * MIB * min(1.0, second / 10.0) + (second % 3) * MIB


def staircase(second: float, per_s: float, rng: random.Random) -> float:
    """A leak of `per_s`, as the job's PSS is summed on a loaded box: each process's PSS read every 2-4 s, so the
    sum moves in steps, with a few MiB of noise."""
    read_at = second - (second % rng.choice((2, 3, 4)))
    return 2 * GIB + per_s * read_at + rng.uniform(-4, 4) * MIB


def watched(sizes: list[float]) -> list[set[str]]:
    """The finding ids held after each tick, a second apart."""
    t = Timeline(cores=2)
    engine = AdviceEngine()
    out = []
    for size in sizes:
        findings = engine.update(t.tick(job=replace(BALANCED, pss_bytes=int(size))))
        out.append({f.id for f in findings if not f.clearing(t.time)})
    return out


def test_start_up_settling_watched_from_the_first_step_stays_quiet():
    for attach in (0, 2, 5):
        held = watched([settling(attach + second) for second in range(40)])
        assert not any("memory-growing" in tick for tick in held), attach


def test_a_leak_read_as_a_staircase_holds_on_every_tick_once_named():
    rng = random.Random(4)
    held = watched([staircase(second, 3 * MIB, rng) for second in range(90)])
    first = next(i for i, tick in enumerate(held) if "memory-growing" in tick)
    assert first <= 25, first  # named within the default doctor watch of a job plus its hold
    assert all("memory-growing" in tick for tick in held[first:]), [i for i, tick in enumerate(held)
                                                                   if "memory-growing" not in tick]


def test_a_leak_that_slows_as_it_grows_is_still_a_leak():
    """keep_losses.py's shape: its rate falls to a quarter over its first 15 s, then holds."""
    sizes = [2 * GIB + (40 * MIB * min(s, 15) * (1 - min(s, 15) / 40) + 10 * MIB * max(0, s - 15)) for s in range(60)]
    assert "memory-growing" in ids_after(sizes)


def ids_after(sizes: list[float]) -> set[str]:
    t = Timeline(cores=2)
    engine = AdviceEngine()
    findings = ()
    for size in sizes:
        findings = engine.update(t.tick(job=replace(BALANCED, pss_bytes=int(size))))
    return ids(findings)
