"""`hwtop fleet ... --json`: one round, printed for scripts: the hosts worst first with their GPU models and top
finding; `--job` only through Prometheus; a Prometheus that does not answer exits 1 with the reason in the JSON."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.exporter.test_exporter import StaticExporter
from tests.prometheus_rig import free_port

HWTOP = [sys.executable, "-m", "hwtop"]


@pytest.mark.slow  # over the fast suite's minute on two cores (--durations)
def test_exporters_read_once_as_json():
    exporter = StaticExporter("dgx-a100", hostname="node-dgx")
    try:
        done = subprocess.run([*HWTOP, "fleet", exporter.url, "--json"], capture_output=True, text=True, timeout=60)
    finally:
        exporter.close()
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout)
    (host,) = answer["hosts"]
    assert host["host"] == "node-dgx" and host["up"] and host["gpus"] == 8
    assert host["gpu_models"] == "8x A100-SXM4-80GB" and "job" not in answer


@pytest.mark.slow  # over the fast suite's minute on two cores (--durations)
def test_a_prometheus_that_does_not_answer_exits_1_and_says_why():
    done = subprocess.run([*HWTOP, "fleet", "--prometheus", f"http://127.0.0.1:{free_port()}", "--job", "train",
                           "--json", "--timeout", "2"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 1 and "unreachable" in json.loads(done.stdout)["problem"]


def test_job_needs_prometheus():
    done = subprocess.run([*HWTOP, "fleet", "127.0.0.1:9400", "--job", "train"], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and "--prometheus" in done.stderr, done.stderr
