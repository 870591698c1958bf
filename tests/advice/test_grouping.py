"""One finding per cause: members of a rule that share a cause and a fix are shown as one naming what it covers,
with its worst member's evidence; members that differ in a way that matters stay apart."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hwtop.advice.engine import AdviceEngine
from hwtop.advice.grouping import MAX_LABEL, covering, group
from hwtop.model.finding import Finding
from tests.advice_timeline import Timeline, run


@pytest.mark.parametrize(("scopes", "label"), [
    ([f"GPU{i}" for i in range(8)], "GPU0-7"),
    (["GPU3", "GPU0"], "GPU0,3"),
    (["GPU0", "GPU1", "GPU2", "GPU5", "GPU10"], "GPU0-2,5,10"),
    ([f"rank {i}" for i in range(8)], "ranks 0-7"),
    (["core 40", "core 12", "core 13"], "cores 12, 13, 40"),
    (["GPU2"], "GPU2"),
    (["job", "box"], "box, job"),
])
def test_a_group_names_what_it_covers_compactly(scopes: list[str], label: str) -> None:
    assert covering(scopes)[0] == label


def test_scopes_that_are_not_numbered_name_their_gpus() -> None:
    assert covering(["GPU0 pid 41000", "GPU1 pid 41001"], gpus=(1, 0))[0] == "GPU0,1"


@given(st.sets(st.integers(0, 4095), min_size=2, max_size=600))
@pytest.mark.slow  # over the fast suite's minute on two cores (--durations)
def test_a_covering_label_is_bounded_and_reads_back_as_its_members(indices: set[int]) -> None:
    label, noun = covering([f"rank {i}" for i in indices])
    assert noun == "ranks" and len(label) <= MAX_LABEL + 20
    parts = label.removeprefix("ranks ").split(", ")
    cut = parts[-1].startswith("…")
    named: set[int] = set()
    for part in parts[:-1] if cut else parts:
        a, _, b = part.partition("-")
        named |= set(range(int(a), int(b or a) + 1))
    assert named <= indices and (cut or named == indices)


def member(scope: str, measure: float | None = None, held_at: float = 100.0, **fields) -> Finding:
    return Finding("gpu-throttled", "warning", f"{scope} clocks throttled", (f"{scope} evidence",), ("cool it",),
                   scope=scope, gpus=(int(scope[3:]),), cause="thermal", measure=measure, held_at=held_at,
                   since=50.0 + int(scope[3:]), **fields)


def test_members_merge_with_the_worst_members_evidence_and_a_count() -> None:
    (one,) = group([member("GPU1", 5.0), member("GPU0", 20.0), member("GPU2", 1.0)], now=100.0)
    assert (one.scope, one.covers, one.count) == ("GPU0-2", ("GPU0", "GPU1", "GPU2"), 3)
    assert one.title == "GPU0-2 clocks throttled" and one.gpus == (0, 1, 2) and one.since == 50.0
    assert one.evidence == ("GPU0 evidence", "the same on 3 GPUs: GPU0-2 (the figures above: GPU0, the worst)")
    assert one.key == ("gpu-throttled", "thermal")


def test_a_member_that_no_longer_holds_neither_speaks_for_the_group_nor_hides() -> None:
    (one,) = group([member("GPU0", 20.0, held_at=92.0), member("GPU1", 5.0)], now=100.0)
    assert one.evidence[0] == "GPU1 evidence" and not one.clearing(100.0)
    assert one.evidence[-1] == "not seen for 8 s on GPU0"
    (gone,) = group([member("GPU0", 20.0, held_at=92.0), member("GPU1", 5.0, held_at=95.0)], now=100.0)
    assert gone.clearing(100.0) and gone.held_at == 95.0 and gone.evidence[0] == "GPU1 evidence"


def test_one_cause_name_with_two_fixes_stays_two_findings_with_two_keys() -> None:
    findings = group([member("GPU0"), Finding("gpu-throttled", "warning", "GPU1 clocks throttled", ("e",),
                                              ("another fix",), scope="GPU1", cause="thermal")], now=100.0)
    assert len(findings) == 2 and len({f.key for f in findings}) == 2


def test_gpus_throttled_for_different_reasons_stay_apart_and_alike_ones_merge() -> None:
    t = Timeline("dgx-a100")
    t.fake.force_reasons(0, "sw_thermal")
    t.fake.force_reasons(1, "sw_thermal")
    t.fake.force_reasons(2, "hw_slowdown")
    t.fake.force_reasons(3, "sw_power_cap")
    found = [f for f in run([t.tick() for _ in range(7)])[-1] if f.id == "gpu-throttled"]
    by_scope = {f.scope: f for f in found}
    assert set(by_scope) == {"GPU0,1", "GPU2", "GPU3"}
    assert by_scope["GPU0,1"].count == 2 and by_scope["GPU0,1"].title == "GPU0,1 clocks throttled"
    assert any("Cooling" in line for line in by_scope["GPU0,1"].fix)
    assert any("Power delivery" in line for line in by_scope["GPU2"].fix)
    assert by_scope["GPU3"].severity == "info"


def test_members_hold_and_clear_on_their_own() -> None:
    """GPU1 cools down: the group shrinks to GPU0 only after GPU1's clear time, and its key stays the same."""
    t = Timeline("dgx-a100")
    engine = AdviceEngine()
    t.fake.force_reasons(0, "sw_thermal")
    t.fake.force_reasons(1, "sw_thermal")
    both = run([t.tick() for _ in range(7)], engine)[-1]
    t.fake.force_reasons(1)
    after = run([t.tick() for _ in range(12)], engine)
    scopes = [next(f.scope for f in found if f.id == "gpu-throttled") for found in after]
    assert next(f for f in both if f.id == "gpu-throttled").scope == "GPU0,1"
    assert scopes[0] == "GPU0,1" and scopes[-1] == "GPU0"
    keys = {f.key for found in [both, *after] for f in found if f.id == "gpu-throttled"}
    assert keys == {("gpu-throttled", "thermal")}


@pytest.mark.slow  # a whole machine for 21 ticks: ~1 s
def test_eight_ranks_and_gpus_that_read_alike_are_one_line_of_evidence() -> None:
    from hwtop.demo.story import STARVED_BEFORE
    from tests.advice_timeline import play_story

    (starved,) = [f for f in play_story("starved", 40)[-1].findings if f.id == "gpu-starved"]
    wait, busy = round(100 * STARVED_BEFORE.data_wait), round(100 * STARVED_BEFORE.gpu_busy)  # the story's model
    assert starved.evidence[0].endswith(f"(ranks 0-7 {wait}%; limit 30%)")
    assert starved.evidence[1] == f"GPU0-7 util {busy}% over the last 10 s"


def test_a_programs_xid_on_several_gpus_is_one_finding_a_cards_own_errors_stay_apart() -> None:
    t = Timeline("dgx-a100")
    engine = AdviceEngine()
    t.fake.set_ecc(5, 0, 2)  # two cards' own memory errors
    t.fake.set_ecc(6, 0, 1)
    run([t.tick()], engine)
    for index in (0, 1, 2):
        t.fake.report_xid(index, 13)  # a program's out-of-range access, on three ranks' GPUs
    errors = [f for f in run([t.tick()], engine)[-1] if f.id == "gpu-errors"]
    assert sorted(f.scope for f in errors) == ["GPU0-2", "GPU5", "GPU6"]
    (program,) = [f for f in errors if f.scope == "GPU0-2"]
    assert program.title == "GPU0-2 reported Xid 13" and program.severity == "warning" and program.count == 3
