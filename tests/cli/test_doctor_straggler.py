"""One slow rank of a real DDP job (tests/jobs/ddp_straggler.py: gloo on CPU, torchrun, no hwtop in it), watched
from outside by the real `hwtop doctor --pid LAUNCHER`: the slowed rank is named within 30 s and the other
rank's time reads as collective waits, not compute; the same job without the flag raises nothing."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from tests.live_processes import descendants, kill_tree

JOB = Path(__file__).parent.parent / "jobs" / "ddp_straggler.py"
HWTOP = [sys.executable, "-m", "hwtop"]
FOUND_WITHIN_S = 30.0
SECONDS = 15
torch_missing = importlib.util.find_spec("torch") is None
slow_torch = [pytest.mark.slow, pytest.mark.skipif(torch_missing, reason="the job needs torch")]


def rank_pids(launcher: int) -> dict[int, int]:
    """rank → pid, from the ranks' environment (as hwtop reads it)."""
    out = {}
    for pid in descendants(launcher):
        try:
            items = Path(f"/proc/{pid}/environ").read_text().split("\0")
            env = dict(item.split("=", 1) for item in items if "=" in item)
        except OSError:
            continue
        if "RANK" in env and Path(f"/proc/{pid}/cmdline").read_bytes().find(b"ddp_straggler") >= 0:
            out.setdefault(int(env["RANK"]), pid)
    return out


@contextmanager
def ddp_job(*args: str) -> Iterator[subprocess.Popen[str]]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}  # the job knows nothing of hwtop
    command = [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", "2", str(JOB),
               "--time-limit", "120", *args]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                               start_new_session=True, env=env)
    try:
        assert process.stdout is not None
        deadline = time.monotonic() + 120
        for line in process.stdout:  # training has started once rank 0 prints its first step
            if line.startswith("step ") or time.monotonic() > deadline:
                break
        assert process.poll() is None, "the job did not start"
        yield process
    finally:
        kill_tree(process.pid)
        process.wait(30)


def doctor(pid: int) -> tuple[int, dict[str, Any], float]:
    started = time.time()
    result = subprocess.run([*HWTOP, "doctor", "--pid", str(pid), "--seconds", str(SECONDS), "--json"],
                            capture_output=True, text=True, timeout=SECONDS + 120)
    assert result.stdout, result.stderr
    return result.returncode, json.loads(result.stdout), started


@slow_torch[0]
@slow_torch[1]
def test_the_slowed_rank_is_named_and_the_other_waits_in_the_collective():
    with ddp_job("--slow-rank", "1") as job:
        ranks = rank_pids(job.pid)
        rc, report, started = doctor(job.pid)
    found = {f["id"]: f for f in report["findings"]}
    assert "rank-straggler" in found, (report["findings"], report["job"]["rank_figures"])
    finding = found["rank-straggler"]
    assert rc == 1 and finding["severity"] == "warning"
    assert finding["first_seen"] - started <= FOUND_WITHIN_S
    assert finding["pids"] == [ranks[1]] and finding["title"].startswith("Rank 1 ")
    assert finding["evidence"][0].startswith(f"rank 1 (pid {ranks[1]} on {os.uname().nodename}) is slow: the "
                                             "others wait for it")  # the verdict's words, as everywhere
    assert f"rank 1 (pid {ranks[1]}, host {os.uname().nodename}) waits in them" in finding["evidence"][2]
    assert "python_augmentation" in " ".join(finding["evidence"]) + " ".join(finding["fix"])
    figures = {r["rank"]: r for r in report["job"]["rank_figures"]}
    assert figures[0]["collective"] >= 0.5 and figures[0]["collective"] > figures[0]["shares"].get("compute", 0)
    assert figures[1]["collective"] < 0.1


@slow_torch[0]
@slow_torch[1]
def test_the_same_job_balanced_names_no_straggler():
    with ddp_job() as job:
        rc, report, _ = doctor(job.pid)
    assert "rank-straggler" not in {f["id"] for f in report["findings"]}, report["job"]["rank_figures"]
    assert rc == 0, report["findings"]


def test_the_text_report_sets_the_ranks_side_by_side_and_marks_the_straggler():
    from hwtop.cli.doctor.facts import BoxFacts, JobFacts, RankFacts
    from hwtop.cli.doctor.findings import Reported
    from hwtop.cli.doctor.render import report, text
    from hwtop.model.finding import Finding

    job = JobFacts("pid 500", (500,), "running", 15.0, processes=3, ranks=2, rank_figures=(
        RankFacts(0, "node-a", 510, samples=120, collective=0.91, site="train.py:57 main"),
        RankFacts(1, "node-a", 511, samples=138, collective=0.01, site="train.py:25 augment"),
        RankFacts(2, "node-\x1b[31mb", None)))
    finding = Finding("rank-straggler", "warning", "Rank 1 holds the job back", ("e",), ("f",), scope="job",
                      pids=(511,))
    facts = BoxFacts(15, None, "box", 0, None, {}, (), job)
    lines = text(report(15.0, facts, [Reported(finding, 1.0, 9.0)])).splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("  ranks:"))
    assert lines[start:start + 4] == [  # a host label's escape is shown, not obeyed, and the columns hold
        "  ranks: rank  host             pid  waits in collectives  busy at",
        "            0  node-a           510  91%                   train.py:57 main",
        "            1  node-a           511  1% <- straggler       train.py:25 augment",
        "            2  node-\u241b[31mb           N/A"]


RANKS_THAT_SLEEP = """
import os, subprocess, sys, time
children = [subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"],
                             env={**os.environ, "RANK": str(rank), "WORLD_SIZE": "2", "LOCAL_RANK": str(rank)})
            for rank in (0, 1)]
print("ready", flush=True)
time.sleep(60)
"""


@pytest.mark.slow  # doctor watches for 8 s
def test_ranks_whose_stacks_cannot_be_read_are_named_and_no_straggler_is_guessed(tmp_path):
    """ptrace refused (a container without SYS_PTRACE): py-spy fails on every rank."""
    fake = tmp_path / "py-spy"
    fake.write_text("#!/bin/sh\necho 'Error: Failed to attach' >&2\necho 'Permission denied (os error 13)' >&2\n"
                    "exit 1\n")
    fake.chmod(0o755)
    launcher = subprocess.Popen([sys.executable, "-c", RANKS_THAT_SLEEP], stdout=subprocess.PIPE, text=True,
                                start_new_session=True)
    try:
        assert launcher.stdout is not None and launcher.stdout.readline().strip() == "ready"
        env = {**os.environ, "PATH": f"{tmp_path}:{os.environ['PATH']}"}
        result = subprocess.run([*HWTOP, "doctor", "--pid", str(launcher.pid), "--seconds", "8", "--json"],
                                capture_output=True, text=True, timeout=120, env=env)
    finally:
        kill_tree(launcher.pid)
        launcher.wait(10)
    report = json.loads(result.stdout)
    found = [f for f in report["findings"] if f["id"] == "rank-straggler"]
    assert result.returncode == 0 and len(found) == 1 and found[0]["severity"] == "info", report["findings"]
    assert len(found[0]["evidence"]) == 2
    assert all("no stack samples, so no collective-wait share" in line and "ptrace" in line
               for line in found[0]["evidence"])
