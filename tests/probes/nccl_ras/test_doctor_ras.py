"""Done when (issue 42): `hwtop doctor --pid` on a 2-rank job on this host whose other 6 ranks are on other hosts
(NCCL_RAS_ADDR in the ranks' environment, libnccl.so.2 mapped), against the RAS stand-in built from NCCL's
documented formats. Host addresses are labels only: every connection goes to 127.0.0.1. Five jobs at once, one
doctor each: a remote rank one AllReduce behind with nothing advancing (exit 1, named with host and pid within
60 s), a dead process, a straggler, a balanced job (quiet), and cut, broken and hostile answers (survived). Then
what each stand-in was sent is checked against the manners."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.nccl_ras_standin import RasStandIn, StandComm, StandRank

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[3]
WORLD = 8
ALLOWED = ("CLIENT PROTOCOL 2", "SET FORMAT json", "STATUS", "MONITOR LIFECYCLE")
INTERVAL = 5.0


class Job:
    def __init__(self, tmp: Path, name: str, counts, raw=None, cut=None) -> None:
        self.local: list[int] = []
        self.counts = counts
        self.server = RasStandIn(self.state, raw=raw, cut=cut)
        lib = tmp / name / "libnccl.so.2.30.7"  # a release whose JSON path hwtop polls (probes/nccl_ras/versions)
        lib.parent.mkdir()
        lib.write_bytes(b"\x7fELF" + b"\0" * 8188)
        self.launcher = subprocess.Popen(
            [sys.executable, str(ROOT / "tests/jobs/nccl_ranks.py"), str(lib), f"127.0.0.1:{self.server.port}",
             str(WORLD), "2"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        assert self.launcher.stdout is not None
        self.local = [int(pid) for pid in self.launcher.stdout.readline().split()]
        assert len(self.local) == 2

    def state(self, n: int) -> list[StandComm]:
        ranks = []
        for rank, count in enumerate(self.counts(n)):
            pid = self.local[rank] if rank < 2 else 4050 + rank
            host = "127.0.0.1" if rank < 2 else f"10.0.0.{2 + rank // 3}"  # this node: one of its addresses
            ranks.append(StandRank(rank, host, pid, rank % 4, {"AllReduce": count, "Broadcast": 1}))
        comm = StandComm(0x27A079B828FF1A75, ranks)
        if self.counts is dead:
            ranks[6].missing = ranks[6].dead = True
        if self.counts is init_then_on and n == 2:
            ranks[4].init_state = 7
        return [comm]

    def doctor(self, seconds: float, as_json: bool) -> subprocess.Popen[str]:
        args = [sys.executable, "-m", "hwtop", "doctor", "--pid", str(self.launcher.pid), "--seconds", str(seconds),
                "--nccl-ras-interval", str(INTERVAL), "--no-gpu"] + (["--json"] if as_json else [])
        return subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin:/usr/local/bin",
                                     "HOME": str(ROOT)})

    def close(self) -> None:
        if self.launcher.poll() is None:
            self.launcher.communicate("", timeout=30)
        self.server.close()


def hung(n: int) -> list[int]:  # rank 5 (on 10.0.0.3) never launches AllReduce #6650
    return [6650] * 5 + [6649] + [6650] * 2


def dead(n: int) -> list[int]:
    return [100 + 3 * n] * WORLD


def straggling(n: int) -> list[int]:  # rank 3 behind in every answer but one, rank 6 once
    counts = [200 + 4 * n] * WORLD
    if n != 2:
        counts[3] -= 1
    if n == 4:
        counts[6] -= 1
    return counts


def balanced(n: int) -> list[int]:  # a different rank is caught one behind each time
    counts = [300 + 4 * n] * WORLD
    counts[n % WORLD] -= 1
    return counts


def init_then_on(n: int) -> list[int]:
    return [10 + n] * WORLD


def mangle(n: int, text: str) -> str:
    if n == 1:  # NCCL prints host names unescaped: a quote breaks the document
        return text.replace('"10.0.0.3"', '"10.0.0.3"evil"', 1)
    return text.replace('"10.0.0.4"', '"10.0.0.4\\u001b]0;owned\\u0007"', 1)  # valid JSON, hostile text


def test_doctor_names_remote_ranks_from_nccl_ras(tmp_path: Path) -> None:
    jobs = {"hang": Job(tmp_path, "hang", hung), "dead": Job(tmp_path, "dead", dead),
            "straggler": Job(tmp_path, "straggler", straggling), "balanced": Job(tmp_path, "balanced", balanced),
            "broken": Job(tmp_path, "broken", init_then_on, raw=mangle, cut={0})}
    try:
        runs = {name: job.doctor(55.0, as_json=name != "hang") for name, job in jobs.items()}
        out = {name: run.communicate(timeout=240) for name, run in runs.items()}
        codes = {name: run.returncode for name, run in runs.items()}
    finally:
        for job in jobs.values():
            job.close()
    for name, (_, err) in out.items():
        assert "Traceback" not in err, (name, err)

    text = out["hang"][0]
    assert codes["hang"] == 1, text
    assert "Rank 5 on 10.0.0.3 never reached the collective the others wait in" in text  # the title
    assert "rank 5 (pid 4055 on 10.0.0.3, GPU 1) has not launched AllReduce #6650, which the other 7 ranks wait in" \
        in text  # NCCL's figure, the first evidence
    assert "(collective-hang, active)" in text
    assert "10.0.0.3" in text and "4055" in text  # the remote rank's row in the rank table
    hang_facts = text.split("What changed:")[1]
    raised = [line for line in hang_facts.splitlines() if "collective-hang" in line]
    assert raised, hang_facts

    report = {name: json.loads(out[name][0]) for name in ("dead", "straggler", "balanced", "broken")}
    ids = {name: {f["id"]: f for f in r["findings"]} for name, r in report.items()}
    lost = ids["dead"]["nccl-rank-lost"]
    assert lost["severity"] == "critical" and "rank 6 (pid 4056 on 10.0.0.4, GPU 2)" in lost["title"]
    assert any("considered dead by NCCL" in line and "since" in line for line in lost["evidence"])
    assert codes["dead"] == 1

    slow = next(f for f in report["straggler"]["findings"] if f["id"] == "rank-straggler" and
                f["severity"] == "warning")  # (beside the info that this host's ranks' stacks are unreadable here)
    assert slow["title"].startswith("Rank 3 holds the job back")
    assert any("rank 3 (pid 4053 on 10.0.0.3, GPU 3)" in line and "no other rank more than once" in line
               for line in slow["evidence"])
    assert "collective-hang" not in ids["straggler"]

    quiet = {f["id"] for f in report["balanced"]["findings"] if f["severity"] != "info"} & {
        "collective-hang", "rank-straggler", "nccl-rank-lost", "nccl-error", "nccl-stopped"}
    assert not quiet, ids["balanced"]
    rows = report["balanced"]["job"]["rank_figures"]
    assert sorted(r["rank"] for r in rows) == list(range(WORLD))
    assert {r["host"] for r in rows if r.get("nccl_only")} == {"10.0.0.2", "10.0.0.3", "10.0.0.4"}
    assert all(not r.get("nccl_only") for r in rows if r["rank"] < 2)  # this host's ranks: their own rows

    broken = report["broken"]["job"]["nccl"]
    assert any("broken JSON answer" in line for line in broken["errors"]), broken
    assert len(broken["errors"]) >= 2 and all("\n" not in line for line in broken["errors"])
    hosts = {r["host"] for r in report["broken"]["job"]["rank_figures"]}
    assert "10.0.0.4\x1b]0;owned\x07" in hosts  # kept literally in the model; printed through safe_text

    for name, job in jobs.items():  # manners, from what each stand-in was sent
        conns = [c for c in job.server.conns if "STATUS" in c.lines]  # MONITOR's connection stays open beside
        assert conns, name
        for conn in job.server.conns:
            assert conn.lines[0] == "CLIENT PROTOCOL 2", (name, conn.lines)
            assert all(line in ALLOWED for line in conn.lines), (name, conn.lines)
        spans = sorted((c.opened, c.closed or 1e18) for c in conns)
        assert all(b[0] >= a[1] for a, b in zip(spans, spans[1:], strict=False)), name  # one query at a time
        starts = [c.opened for c in conns]
        gaps = [b - a for a, b in zip(starts, starts[1:], strict=False)]
        assert min(gaps) >= INTERVAL - 0.5, (name, gaps)
    broken_starts = [c.opened for c in jobs["broken"].server.conns if "STATUS" in c.lines]
    assert broken_starts[3] - broken_starts[2] >= 30.0 - 0.5  # held while a communicator initialised
