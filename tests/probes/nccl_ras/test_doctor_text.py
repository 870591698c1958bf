"""doctor's NCCL RAS lines, without a job: hostile host names printed visibly, a watch long enough for a hang."""

from __future__ import annotations


def test_hostile_host_printed_visibly() -> None:
    from hwtop.cli.doctor.facts import RankFacts, RankNccl
    from hwtop.cli.doctor.render import rank_lines

    rows = [RankFacts(0, "node\x1b[2J", 1, nccl=RankNccl("RUNNING", 0, {}, False)),
            RankFacts(1, "ok", 2, nccl=RankNccl("DEAD", None, {}, False))]
    lines = rank_lines(rows, None)
    assert "\x1b" not in "".join(lines) and "node␛[2J" in "".join(lines)


def test_doctor_watches_long_enough_to_tell_a_hang() -> None:
    from hwtop.advice.thresholds import Thresholds
    from hwtop.cli.doctor.watch import nccl_watch_s

    assert nccl_watch_s(10.0, Thresholds()) == 52.0
    assert nccl_watch_s(1.0, Thresholds()) == 42.0  # never under 5 s apart
