"""`hwtop ... | head`: a reader that closes the pipe early ends hwtop quietly with 141 (a shell's SIGPIPE status),
no crash line, no crash file; a BrokenPipeError that is not stdout's is still a crash (1)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import hwtop.cli.main as cli_main
from hwtop.cli.closed_pipe import SIGPIPE_EXIT

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow  # over the fast suite's minute on two cores (--durations)
def test_a_reader_that_stops_early_ends_hwtop_quietly(tmp_path: Path):
    env = dict(os.environ, XDG_STATE_HOME=str(tmp_path), PYTHONPATH=str(ROOT))
    hwtop = subprocess.Popen([sys.executable, "-m", "hwtop", "--demo", "dgx-a100", "snapshot", "--json"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=ROOT)
    assert hwtop.stdout is not None and hwtop.stderr is not None
    assert hwtop.stdout.read(100).startswith(b"{")  # what `head -c 100` takes, then it closes the pipe
    hwtop.stdout.close()
    error = hwtop.stderr.read().decode()
    assert hwtop.wait(30) == SIGPIPE_EXIT, error
    assert error == ""
    assert not list(tmp_path.rglob("crash-*"))


def test_a_broken_pipe_elsewhere_is_still_a_crash(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                  capsys: pytest.CaptureFixture[str]):
    def broken(argv: list[str]) -> int:
        raise BrokenPipeError(32, "Broken pipe")  # a job's pipe, say: stdout itself is still read

    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))
    monkeypatch.setattr(cli_main, "run_command", broken)
    assert cli_main.main(["snapshot"]) == 1
    assert "hwtop: crashed: BrokenPipeError" in capsys.readouterr().err
    assert len(list(tmp_path.rglob("crash-*"))) == 1
