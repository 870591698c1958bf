"""The exporter parsed with prometheus-client's own parser, names and labels against dcgm-exporter's, scrapes
that cost no NVML call, only /metrics served, 127.0.0.1 by default; a real Prometheus server scraping it; the
fleet view against two live exporters and a dead address."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request

import pytest
from prometheus_client.parser import text_string_to_metric_families

from hwtop.demo.nvml import FakeNvmlLibrary
from hwtop.exporter.server import make_exporter
from hwtop.probes.gpu import NvmlProbe
from hwtop.session.sampler import Sampler
from hwtop.session.session import Session

HWTOP = [sys.executable, "-m", "hwtop.cli.main"]
DCGM_NAMES = {"DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_FB_FREE", "DCGM_FI_DEV_GPU_TEMP",
              "DCGM_FI_DEV_POWER_USAGE", "DCGM_FI_DEV_SM_CLOCK", "DCGM_FI_DEV_MEM_CLOCK",
              "DCGM_FI_DEV_PCIE_TX_THROUGHPUT", "DCGM_FI_DEV_PCIE_RX_THROUGHPUT"}
DCGM_LABELS = {"gpu", "UUID", "pci_bus_id", "device", "modelName", "Hostname"}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Exporter:
    """An in-process exporter of a demo machine, its fake NVML inspectable."""

    def __init__(self, profile: str = "dgx-a100") -> None:
        self.fake = FakeNvmlLibrary(profile)
        self.sampler = Sampler(gpu=NvmlProbe(self.fake.pynvml, source=f"demo:{profile}"))
        self.session = Session(self.sampler)
        self.server, self.stop, self.latest = make_exporter(self.session.tick, "127.0.0.1", 0, 0.2, "test")
        self.port = self.server.server_port
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True)
        self.thread.start()
        deadline = time.monotonic() + 30
        while self.latest.samples < 2 and time.monotonic() < deadline:
            time.sleep(0.05)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/metrics"

    def close(self) -> None:
        self.stop.set()
        self.server.shutdown()
        self.server.server_close()
        self.sampler.close()


@pytest.fixture
def exporter():
    running = Exporter()
    yield running
    running.close()


def scrape(url: str) -> str:
    with urllib.request.urlopen(url, timeout=10) as response:
        return response.read().decode()


def test_metrics_parse_with_dcgm_names_and_labels(exporter):
    families = {f.name: f for f in text_string_to_metric_families(scrape(exporter.url))}
    assert DCGM_NAMES <= set(families)
    util = families["DCGM_FI_DEV_GPU_UTIL"].samples
    assert len(util) == 8 and {s.labels["gpu"] for s in util} == {str(i) for i in range(8)}
    assert all(set(s.labels) == DCGM_LABELS for s in util)
    assert {s.labels["modelName"] for s in util} == {"NVIDIA A100-SXM4-80GB"}
    assert {s.labels["device"] for s in util} == {f"nvidia{i}" for i in range(8)}
    snapshot = exporter.latest.frame.snapshot
    gpu0 = next(g for g in snapshot.gpus if g.index == 0)
    used = next(s.value for s in families["DCGM_FI_DEV_FB_USED"].samples if s.labels["gpu"] == "0")
    assert used == pytest.approx(gpu0.memory_used_bytes / (1 << 20))  # MiB, as dcgm-exporter reports it
    assert {"hwtop_cpu_core_busy_percent", "hwtop_numa_memory_total_bytes", "hwtop_disk_read_bytes_per_second",
            "hwtop_advice_finding", "hwtop_workload_samples_per_second"} <= set(families)


@pytest.mark.slow
def test_findings_are_series(exporter):
    exporter.fake.force_reasons(3, "hw_thermal")
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        text = scrape(exporter.url)
        found = [s for f in text_string_to_metric_families(text) if f.name == "hwtop_advice_finding"
                 for s in f.samples]
        if any(s.labels["id"] == "gpu-throttled" and s.labels["scope"] == "GPU3" for s in found):
            break
        time.sleep(0.3)
    else:
        pytest.fail("gpu-throttled never exported")
    exporter.fake.force_reasons(3)


def test_a_scrape_costs_no_nvml_call(exporter):
    exporter.stop.set()  # freeze the sampler: from here, only scrapes run
    time.sleep(0.5)
    before = sum(exporter.fake.calls.values())
    for _ in range(5):
        scrape(exporter.url)
    assert sum(exporter.fake.calls.values()) == before


def test_only_metrics_is_served(exporter):
    for path in ("/", "/metrics/", "/favicon.ico", "/../etc/passwd"):
        with pytest.raises(urllib.error.HTTPError) as error:
            urllib.request.urlopen(f"http://127.0.0.1:{exporter.port}{path}", timeout=5)
        assert error.value.code == 404


def test_the_command_binds_127_0_0_1_by_default_and_refuses_a_taken_port():
    port = free_port()
    process = subprocess.Popen([*HWTOP, "--demo", "rtx3090", "export", "--listen", f":{port}"],
                               stderr=subprocess.PIPE, text=True)
    try:
        line = process.stderr.readline()
        assert line.strip() == f"serving http://127.0.0.1:{port}/metrics (ctrl-c stops)"
        taken = subprocess.run([*HWTOP, "--demo", "rtx3090", "export", "--listen", f"127.0.0.1:{port}"],
                               capture_output=True, text=True, timeout=30)
        assert taken.returncode == 2 and "Address already in use" in taken.stderr
        listening = subprocess.run(["ss", "-ltnH", f"sport = :{port}"], capture_output=True, text=True)
        if listening.returncode == 0:  # the local address column: bound to loopback only
            assert [line.split()[3] for line in listening.stdout.splitlines()] == [f"127.0.0.1:{port}"]
    finally:
        process.terminate()
        process.wait(10)
    assert process.returncode == 0


@pytest.mark.parametrize(("listen", "message"), [("9400", "expected HOST:PORT"), ("h:99999", "port must be 1-65535"),
                                                 ("h:x", "not a port number")])
def test_bad_listen_address_exits_2(listen, message):
    result = subprocess.run([*HWTOP, "export", "--listen", listen], capture_output=True, text=True, timeout=30)
    assert result.returncode == 2 and message in result.stderr and len(result.stderr.strip().splitlines()) == 1


PROMETHEUS = shutil.which("prometheus")


@pytest.mark.slow
@pytest.mark.skipif(PROMETHEUS is None, reason="Debian's prometheus package is not installed (.ci/run installs it)")
def test_a_real_prometheus_scrapes_eight_gpus():
    port, prom_port = free_port(), free_port()
    exporter = subprocess.Popen([*HWTOP, "--demo", "dgx-a100", "export", "--listen", f"127.0.0.1:{port}",
                                 "--interval", "0.5"], stderr=subprocess.DEVNULL)
    with tempfile.TemporaryDirectory() as data:
        config = os.path.join(data, "prometheus.yml")
        with open(config, "w") as handle:
            handle.write("global:\n  scrape_interval: 1s\nscrape_configs:\n  - job_name: hwtop\n"
                         f"    static_configs:\n      - targets: ['127.0.0.1:{port}']\n")
        server = subprocess.Popen([PROMETHEUS, f"--config.file={config}", f"--storage.tsdb.path={data}/tsdb",
                                   f"--web.listen-address=127.0.0.1:{prom_port}"],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            query = f"http://127.0.0.1:{prom_port}/api/v1/query?query=DCGM_FI_DEV_GPU_UTIL"
            result = []
            deadline = time.monotonic() + 90
            while time.monotonic() < deadline and len(result) < 8:
                time.sleep(1)
                try:
                    result = json.loads(scrape(query))["data"]["result"]
                except (urllib.error.URLError, OSError, KeyError, ValueError):
                    result = []
            assert len(result) == 8
            assert {r["metric"]["gpu"] for r in result} == {str(i) for i in range(8)}
            assert all(r["metric"]["job"] == "hwtop" and r["metric"]["modelName"] == "NVIDIA A100-SXM4-80GB"
                       for r in result)
        finally:
            server.terminate()
            exporter.terminate()
            server.wait(20)
            exporter.wait(20)


# ----- fleet -----

async def test_fleet_view_two_exporters_and_a_dead_one():
    from hwtop.tui.fleet_app import FleetApp, HostScreen

    first, second = Exporter("dgx-a100"), Exporter("rtx3090")
    dead = f"127.0.0.1:{free_port()}"  # nothing listens there
    try:
        app = FleetApp([first.url, f"127.0.0.1:{second.port}", dead], interval=0.5, timeout=1.0)
        async with app.run_test(size=(140, 30)) as pilot:
            await app.first_round.wait()
            await pilot.pause()
            views = app.views
            assert len(views[first.url].gpus) == 8 and len(views[f"127.0.0.1:{second.port}"].gpus) == 1
            assert views[dead].error.startswith("unreachable")
            rows = [[str(c) for c in app.table.get_row_at(i)] for i in range(3)]
            assert rows[0][3] == "8" and rows[1][3] == "1" and "unreachable" in rows[2][2]
            rounds = app.rounds
            while app.rounds < rounds + 1:  # the dead host is retried, the live ones refreshed
                await pilot.pause(0.1)
            await pilot.press("enter")
            await pilot.pause()
            assert isinstance(app.screen, HostScreen)
            assert app.screen.table.row_count == 8
            await pilot.press("escape")
            await pilot.pause()
            assert not isinstance(app.screen, HostScreen)
    finally:
        first.close()
        second.close()


def test_fleet_parses_a_dcgm_exporter_page():
    from hwtop.fleet.scrape import parse

    page = ('# HELP DCGM_FI_DEV_GPU_UTIL GPU utilization (in %).\n# TYPE DCGM_FI_DEV_GPU_UTIL gauge\n'
            'DCGM_FI_DEV_GPU_UTIL{gpu="0",UUID="GPU-a",device="nvidia0",modelName="NVIDIA H100 80GB HBM3",'
            'Hostname="node7"} 71\n'
            '# TYPE DCGM_FI_DEV_FB_USED gauge\nDCGM_FI_DEV_FB_USED{gpu="0",UUID="GPU-a",Hostname="node7"} 40960\n'
            '# TYPE DCGM_FI_DEV_FB_FREE gauge\nDCGM_FI_DEV_FB_FREE{gpu="0",UUID="GPU-a",Hostname="node7"} 40960\n')
    view = parse("http://node7:9400/metrics", page)
    assert view.hostname == "node7" and view.util_mean == 71 and view.memory == (40960, 81920)
    assert not view.hwtop and view.top_finding is None


@pytest.mark.parametrize(("args", "message"), [((), "needs at least one exporter URL"),
                                               (("ftp://x",), "not an exporter address")])
def test_fleet_bad_usage(args, message):
    result = subprocess.run([*HWTOP, "fleet", *args], capture_output=True, text=True, timeout=30)
    assert result.returncode == 2 and message in result.stderr
