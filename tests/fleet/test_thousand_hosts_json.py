"""`hwtop fleet --prometheus URL --json` over a real Prometheus holding a thousand hosts of dcgm-exporter series
(8 GPUs each), node-exporter's and hwtop's on a fifth of them, backfilled with promtool as the benchmark's
(benchmarks/fleet_scale.py, without the series nobody asks for): every host and every GPU is listed."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from benchmarks.fleet_scale import Server, write_fleet

ROOT = Path(__file__).resolve().parents[2]
HOSTS, GPUS = 1000, 8

pytestmark = [pytest.mark.slow, pytest.mark.skipif(shutil.which("prometheus") is None
                                                   or shutil.which("promtool") is None,
                                                   reason="needs Debian's prometheus package")]


def test_json_lists_a_thousand_hosts_and_eight_thousand_gpus(tmp_path: Path) -> None:
    data, tsdb = tmp_path / "fleet.om", tmp_path / "tsdb"
    write_fleet(data, HOSTS, GPUS, 0, 0, time.time(), minutes=10, held=False, cpus=1)
    subprocess.run(["promtool", "tsdb", "create-blocks-from", "openmetrics", str(data), str(tsdb)], check=True,
                   stdout=subprocess.DEVNULL, timeout=600)
    data.unlink()
    server = Server(tsdb)
    try:
        done = subprocess.run([sys.executable, "-m", "hwtop", "fleet", "--prometheus", server.url, "--timeout", "60",
                               "--json"], capture_output=True, text=True, cwd=ROOT, timeout=300,
                              env={**os.environ, "PYTHONPATH": str(ROOT)})
    finally:
        server.close()
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout)
    hosts = answer["hosts"]
    assert len(hosts) == HOSTS and len({h["host"] for h in hosts}) == HOSTS, [h["host"] for h in hosts][:5]
    assert sum(h["gpus"] for h in hosts) == HOSTS * GPUS
    assert answer["problem"] is None
