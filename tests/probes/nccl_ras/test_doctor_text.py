"""doctor's NCCL RAS lines, without a job: hostile host names printed visibly, a watch long enough for a hang."""

from __future__ import annotations


def test_hostile_host_printed_visibly() -> None:
    from hwtop.cli.doctor import _rank_lines

    rows = [{"rank": 0, "host": "node\x1b[2J", "pid": 1, "samples": 0, "collective": 0.0, "site": None,
             "nccl_state": "RUNNING", "lag": 0},
            {"rank": 1, "host": "ok", "pid": 2, "samples": 0, "collective": 0.0, "site": None,
             "nccl_state": "DEAD", "lag": None}]
    lines = _rank_lines(rows, None)
    assert "\x1b" not in "".join(lines) and "node␛[2J" in "".join(lines)


def test_doctor_watches_long_enough_to_tell_a_hang() -> None:
    from hwtop.advice.thresholds import Thresholds
    from hwtop.cli.doctor import nccl_watch_s

    assert nccl_watch_s(10.0, Thresholds()) == 52.0
    assert nccl_watch_s(1.0, Thresholds()) == 42.0  # never under 5 s apart
