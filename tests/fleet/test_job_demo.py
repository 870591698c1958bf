"""The fleet's job view over demo machines through a real Prometheus: node-a plays the straggler story (GPU3's
clocks held back, the other ranks waiting for rank 3 in NCCL), node-b a healthy DGX; `hwtop fleet --prometheus
URL --job NAME --json` names rank 3 on node-a, with node-a's own top finding, gpu-throttled on GPU3, as the
likely cause — the story's cause, found across hosts; without --job, the list of jobs names it too."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.prometheus_rig import PROMETHEUS, HwtopExporter, Prometheus

ROOT = Path(__file__).resolve().parents[2]
HWTOP = [sys.executable, "-m", "hwtop"]


@pytest.mark.slow
@pytest.mark.skipif(PROMETHEUS is None, reason="Debian's prometheus package is not installed")
def test_the_straggler_of_the_demo_story_is_named_with_its_hosts_throttled_gpu():
    exporters: list[HwtopExporter] = []
    prometheus = None
    try:
        exporters.append(HwtopExporter("dgx-a100:straggler", "node-a", ("--job-name", "pretrain")))
        exporters.append(HwtopExporter("dgx-a100", "node-b"))
        prometheus = Prometheus({"train": [(e.target, "/metrics", {}) for e in exporters]})
        deadline, answer = time.monotonic() + 120, {}
        while time.monotonic() < deadline:
            done = subprocess.run([*HWTOP, "fleet", "--prometheus", prometheus.url, "--job", "pretrain", "--json",
                                   "--rank-window", "15"], capture_output=True, text=True, timeout=60, cwd=ROOT)
            answer = json.loads(done.stdout)
            verdict = (answer.get("job") or {}).get("verdict")
            if verdict and verdict.get("likely_cause"):
                break
            time.sleep(2)
        verdict = answer["job"]["verdict"]
        assert (verdict["kind"], verdict["rank"], verdict["host"]) == ("straggler", 3, "node-a"), verdict
        assert verdict["likely_cause"] == {"rule": "gpu-throttled", "severity": "warning", "scope": "GPU3"}
        assert [(r["host"], r["rank"]) for r in answer["job"]["ranks"]][0] == ("node-a", 3)
        hosts = {h["host"]: h for h in answer["hosts"]}
        assert hosts["node-a"]["gpu_models"] == hosts["node-b"]["gpu_models"] == "8x A100-SXM4-80GB"
        # Without --job: the jobs this Prometheus holds, the same verdict on the list (real PromQL, real answers).
        done = subprocess.run([*HWTOP, "fleet", "--prometheus", prometheus.url, "--json", "--rank-window", "15"],
                              capture_output=True, text=True, timeout=60, cwd=ROOT)
        jobs = json.loads(done.stdout)["jobs"]  # node-b's demo focuses its own (steady) job too, under its own name
        listed = next(job for job in jobs if job["job"] == "pretrain")
        assert len(jobs) == 2 and jobs[0] is listed  # the straggler first
        assert (listed["hosts"], listed["ranks"]) == (["node-a"], 8), listed
        assert (listed["verdict"]["kind"], listed["verdict"]["rank"]) == ("straggler", 3), listed
    finally:
        if prometheus is not None:
            prometheus.close()
        for exporter in exporters:
            exporter.close()
