"""A DDP job over two "nodes" on this machine: two torchrun launchers (`--nnodes 2`, a c10d rendezvous on a free
loopback port) running an ordinary gloo/CPU script, each watched by its own `hwtop export --job` with its own
host label, a real Prometheus scraping both, and `hwtop fleet --prometheus URL --job NAME --json` asked until it
names node-1's rank: slowed (a straggler), then stalled before an all-reduce (a hang). One rank per node: the
box has two cores. Every process started here is stopped, its whole group, however the test ends."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from tests.prometheus_rig import PROMETHEUS, Prometheus, free_port

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "tests" / "jobs" / "ddp_nodes.py"
HWTOP = [sys.executable, "-m", "hwtop"]
JOB = "ddp-two-nodes"
NAMED_WITHIN_S = 60.0

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(PROMETHEUS is None, reason="Debian's prometheus package is not installed")]


def stop_group(process: subprocess.Popen, grace_s: float = 5.0) -> None:
    """SIGTERM to the process group the test started, SIGKILL to what is left after `grace_s`."""
    for sig, wait_s in ((signal.SIGTERM, grace_s), (signal.SIGKILL, 5.0)):
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:
            break
        try:
            process.wait(wait_s)
        except subprocess.TimeoutExpired:
            continue
    try:  # the leader gone, its children may linger in the group: make sure
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


class Node:
    """One torchrun launcher (its own process group) and the `hwtop export --job LAUNCHER` that watches it."""

    def __init__(self, node_rank: int, rendezvous: int, job_args: list[str], logs: Path) -> None:
        self.host = f"node-{node_rank}"
        self.log = open(logs / f"{self.host}.log", "w")  # noqa: SIM115 - closed in close()
        env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONPATH=str(ROOT))
        self.launcher = subprocess.Popen(
            [sys.executable, "-m", "torch.distributed.run", "--nnodes", "2", "--node-rank", str(node_rank),
             "--nproc-per-node", "1", "--rdzv-backend", "c10d", "--rdzv-endpoint", f"127.0.0.1:{rendezvous}",
             "--rdzv-id", JOB, str(SCRIPT), "--seconds", "240", *job_args],
            stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True, env=env, cwd=logs)
        self.port = free_port()
        try:
            self.exporter = subprocess.Popen(
                [*HWTOP, "export", "--job", str(self.launcher.pid), "--job-name", JOB, "--hostname", self.host,
                 "--listen", f"127.0.0.1:{self.port}", "--interval", "1"],
                stdout=subprocess.DEVNULL, stderr=self.log, start_new_session=True, env=env, cwd=ROOT)
        except BaseException:
            stop_group(self.launcher)
            self.log.close()
            raise

    def close(self) -> None:
        stop_group(self.launcher)
        stop_group(self.exporter)
        self.log.close()


class TwoNodes:
    def __init__(self, node1_args: list[str], logs: Path) -> None:
        rendezvous = free_port()
        self.nodes: list[Node] = []
        self.prometheus: Prometheus | None = None
        try:
            for rank, args in ((0, []), (1, node1_args)):
                self.nodes.append(Node(rank, rendezvous, args, logs))  # one by one: a failed start leaks none
            self.prometheus = Prometheus({"train": [(f"127.0.0.1:{n.port}", "/metrics", {}) for n in self.nodes]})
        except BaseException:
            self.close()
            raise
        self.started = time.monotonic()

    def fleet(self) -> dict:
        assert self.prometheus is not None
        done = subprocess.run([*HWTOP, "fleet", "--prometheus", self.prometheus.url, "--job", JOB, "--json",
                               "--rank-window", "20", "--timeout", "5"], capture_output=True, text=True, timeout=60,
                              cwd=ROOT, env=dict(os.environ, PYTHONPATH=str(ROOT)))
        assert done.returncode in (0, 1), done.stderr
        return json.loads(done.stdout)

    def until_named(self, kind: str, within_s: float) -> tuple[dict, float]:
        """Asks the fleet every few seconds until its verdict is `kind`; the answer and when it came."""
        answer: dict = {}
        while time.monotonic() - self.started < within_s:
            answer = self.fleet()
            verdict = (answer.get("job") or {}).get("verdict")
            if verdict and verdict["kind"] == kind:
                return answer, time.monotonic() - self.started
            time.sleep(2.0)
        raise AssertionError(f"no {kind} named within {within_s:g} s; last answer: {json.dumps(answer)[:3000]}")

    def close(self) -> None:
        for node in self.nodes:
            node.close()
        if self.prometheus is not None:
            self.prometheus.close()


@pytest.fixture
def logs():
    with tempfile.TemporaryDirectory(prefix="hwtop-two-nodes-") as where:
        yield Path(where)


def node1_rank(answer: dict) -> int:
    ranks = [r["rank"] for r in answer["job"]["ranks"] if r["host"] == "node-1"]
    assert len(ranks) == 1, answer["job"]["ranks"]
    return ranks[0]


def test_the_fleet_names_the_slow_rank_on_node_1(logs: Path):
    job = TwoNodes(["--slow-ms", "60"], logs)
    try:
        answer, after = job.until_named("straggler", NAMED_WITHIN_S)
        verdict = answer["job"]["verdict"]
        assert verdict["host"] == "node-1" and verdict["rank"] == node1_rank(answer), verdict
        assert [r["host"] for r in answer["job"]["ranks"]] == ["node-1", "node-0"]  # worst first
        waiting = next(r for r in answer["job"]["ranks"] if r["host"] == "node-0")
        assert waiting["collective_share"] >= 0.3, waiting
        print(f"straggler named {after:.1f} s after the launchers started: {verdict}")
    finally:
        job.close()


def test_the_fleet_names_the_rank_that_never_reaches_the_all_reduce(logs: Path):
    job = TwoNodes(["--stall-after", "40"], logs)
    try:
        answer, after = job.until_named("hang", NAMED_WITHIN_S + 30)
        verdict = answer["job"]["verdict"]
        assert verdict["host"] == "node-1" and verdict["rank"] == node1_rank(answer), verdict
        print(f"hang named {after:.1f} s after the launchers started: {verdict}")
    finally:
        job.close()
