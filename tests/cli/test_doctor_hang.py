"""collective-hang on one node, from the ranks' own figures: a real torchrun DDP job (gloo, CPU) whose rank 1
stops before an all-reduce while rank 0 waits in it; `hwtop doctor --pid LAUNCHER` exits 1 and names rank 1,
its pid and where it is (no GPU needed: the figures are the ranks' stack samples and blocked time)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "tests" / "jobs" / "ddp_nodes.py"
HWTOP = [sys.executable, "-m", "hwtop"]


def rank_pid(launcher: int, rank: int, timeout: float = 60.0) -> int:
    """The pid whose environment says RANK=rank, among the launcher's children (as hwtop reads it)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for name in os.listdir("/proc"):
            if not name.isdigit():
                continue
            try:
                stat = Path(f"/proc/{name}/stat").read_text()
                if int(stat[stat.rindex(")") + 2:].split()[1]) != launcher:
                    continue
                environ = Path(f"/proc/{name}/environ").read_bytes().split(b"\0")
            except (OSError, ValueError):
                continue
            if f"RANK={rank}".encode() in environ:
                return int(name)
        time.sleep(0.5)
    raise AssertionError(f"no rank {rank} under {launcher}")


@pytest.mark.slow
def test_doctor_names_the_rank_that_never_reached_the_all_reduce(tmp_path: Path):
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}  # the job knows nothing of hwtop
    env["OMP_NUM_THREADS"] = "1"
    with open(tmp_path / "job.log", "w") as log:
        job = subprocess.Popen([sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", "2", str(SCRIPT),
                                "--seconds", "180", "--stall-after", "30", "--stall-rank", "1"],
                               stdout=log, stderr=subprocess.STDOUT, start_new_session=True, env=env, cwd=tmp_path)
    ranks: list[int] = []
    try:
        stalled = rank_pid(job.pid, 1)
        ranks += [stalled, rank_pid(job.pid, 0)]
        deadline = time.monotonic() + 120
        while "waiting for the next shard" not in (tmp_path / "job.log").read_text():
            assert time.monotonic() < deadline and job.poll() is None, (tmp_path / "job.log").read_text()[-2000:]
            time.sleep(0.5)
        done = subprocess.run([*HWTOP, "doctor", "--pid", str(job.pid), "--seconds", "25", "--json"],
                              capture_output=True, text=True, timeout=180, cwd=ROOT,
                              env=dict(os.environ, PYTHONPATH=str(ROOT)))
        assert done.returncode == 1, done.stderr
        findings = {f["id"]: f for f in json.loads(done.stdout)["findings"]}
        hang = findings.get("collective-hang")
        assert hang is not None, list(findings)
        # a rank of this host is named as NCCL names one (its host only where it is another)
        assert hang["title"].startswith("Rank 1 never reached") and hang["pids"] == [stalled], hang
        assert any("wait_for_next_shard" in line for line in hang["evidence"]), hang["evidence"]
        assert "rank-straggler" not in findings or findings["rank-straggler"]["severity"] == "info"
    finally:
        stop(job, ranks)


def stop(job: subprocess.Popen[bytes], ranks: list[int]) -> None:
    """torchrun starts each worker in a process group of its own, so the launcher's group does not reach them:
    SIGTERM the launcher (it stops its workers), then SIGKILL whichever rank outlived it."""
    try:
        os.killpg(job.pid, signal.SIGTERM)
        job.wait(15)
    except (ProcessLookupError, subprocess.TimeoutExpired):
        pass
    for pid in (job.pid, *ranks):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    job.wait(10)
