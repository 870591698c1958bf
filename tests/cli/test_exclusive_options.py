"""Options that contradict each other: refused with status 2 and one line naming both, before any
probe, demo or recording is touched."""

from __future__ import annotations

import pytest

from hwtop.cli.main import run_command
from hwtop.cli.options import EXCLUSIVE


@pytest.mark.parametrize(("argv", "first", "second"), [
    (["--demo", "rtx3090", "snapshot", "--json", "--replay", "rec.jsonl"], "--demo", "--replay"),
    (["snapshot", "--json", "--demo", "rtx3090", "--replay", "rec.jsonl"], "--demo", "--replay"),
    (["--demo", "rtx3090", "replay", "rec.jsonl"], "--demo", "replay FILE"),
    (["replay", "rec.jsonl", "--demo", "rtx3090"], "--demo", "replay FILE"),
    (["--pid", "1", "--job", "train"], "--pid", "--job"),
    (["doctor", "--pid", "1", "--job", "train"], "--pid", "--job"),
    (["--workload", "balanced", "--pid", "1"], "--workload", "--pid"),
    (["doctor", "--workload", "balanced", "--job", "train"], "--workload", "--job"),
    (["--workload", "balanced", "replay", "rec.jsonl"], "--workload", "replay FILE"),
    (["--pid", "1", "replay", "rec.jsonl"], "--pid", "replay FILE"),
    (["snapshot", "--json", "--dem=rtx3090", "--repl", "rec.jsonl"], "--demo", "--replay"),  # abbreviations count
])
def test_contradicting_options_exit_2_with_one_line_naming_both(capsys, argv, first, second) -> None:
    with pytest.raises(SystemExit) as stop:
        run_command(argv)
    assert stop.value.code == 2
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert captured.out == "" and len(lines) == 1, captured.err
    assert lines[0].startswith(f"hwtop: error: {first} and {second} cannot be used together: "), lines[0]


def test_every_pair_has_a_reason() -> None:
    assert all(first != second and why for first, second, why in EXCLUSIVE)
    assert len({(a, b) for a, b, _ in EXCLUSIVE}) == len(EXCLUSIVE)
