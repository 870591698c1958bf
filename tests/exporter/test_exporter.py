"""The exporter: dcgm-exporter's names, types, units and label order, parsed back with prometheus-client's own
parser; hwtop_* extras; scrapes that cost no NVML call; only /metrics served; 127.0.0.1 by default and a warning
beyond loopback; per-connection read timeouts, 2,000 idle connections on a constant number of threads."""

from __future__ import annotations

import io
import re
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from contextlib import redirect_stderr

import pytest
from msgspec.structs import replace
from prometheus_client.parser import text_string_to_metric_families

from hwtop.demo.nvml import FakeNvmlLibrary
from hwtop.exporter.metrics import DCGM_FIELDS, families
from hwtop.exporter.server import make_exporter, metrics_app
from hwtop.exporter.text import Family, render
from hwtop.model.finding import Finding
from hwtop.model.frame import Frame
from hwtop.model.snapshot import GpmMetrics, NvlinkErrors, RowRemap
from hwtop.model.workload import RankState, WorkloadState
from hwtop.probes.gpu import NvmlProbe
from hwtop.session.sampler import Sampler
from hwtop.session.session import Session
from tests.factories import demo_snapshots, host_snapshot

HWTOP = [sys.executable, "-m", "hwtop.cli.main"]
MIB = 1 << 20
DCGM_LABELS = ("gpu", "UUID", "pci_bus_id", "device", "modelName", "Hostname")  # dcgm-exporter's order
# Names, types and units as dcgm-exporter's default-counters.csv / dcp-metrics-included.csv write them.
DCGM_TYPES = {"DCGM_FI_DEV_SM_CLOCK": "gauge", "DCGM_FI_DEV_MEM_CLOCK": "gauge", "DCGM_FI_DEV_GPU_TEMP": "gauge",
              "DCGM_FI_DEV_POWER_USAGE": "gauge", "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION": "counter",
              "DCGM_FI_DEV_PCIE_REPLAY_COUNTER": "counter", "DCGM_FI_DEV_GPU_UTIL": "gauge",
              "DCGM_FI_DEV_MEM_COPY_UTIL": "gauge", "DCGM_FI_DEV_XID_ERRORS": "gauge", "DCGM_FI_DEV_FB_FREE": "gauge",
              "DCGM_FI_DEV_FB_USED": "gauge", "DCGM_FI_DEV_FB_RESERVED": "gauge",
              "DCGM_FI_DEV_ENFORCED_POWER_LIMIT": "gauge", "DCGM_FI_DEV_ECC_SBE_VOL_TOTAL": "counter",
              "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL": "counter", "DCGM_FI_PROF_GR_ENGINE_ACTIVE": "gauge",
              "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE": "gauge", "DCGM_FI_PROF_DRAM_ACTIVE": "gauge",
              "DCGM_FI_PROF_SM_ACTIVE": "gauge", "DCGM_FI_PROF_SM_OCCUPANCY": "gauge",
              "DCGM_FI_PROF_PCIE_TX_BYTES": "gauge", "DCGM_FI_PROF_PCIE_RX_BYTES": "gauge",
              "DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS": "counter", "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS": "counter",
              "DCGM_FI_DEV_ROW_REMAP_FAILURE": "gauge", "DCGM_FI_DEV_ROW_REMAP_PENDING": "gauge",
              "DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL": "counter",
              "DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL": "counter",
              "DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL": "counter",
              "DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL": "counter",
              "DCGM_FI_DEV_POWER_VIOLATION": "counter", "DCGM_FI_DEV_THERMAL_VIOLATION": "counter"}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Exporter:
    """An in-process exporter of a demo machine, its fake NVML inspectable."""

    def __init__(self, profile: str = "dgx-a100", hostname: str | None = None, **server: float) -> None:
        self.fake = FakeNvmlLibrary(profile)
        self.sampler = Sampler(gpu=NvmlProbe(self.fake.pynvml, source=f"demo:{profile}"))
        self.session = Session(self.sampler)
        self.server, self.stop, self.latest = make_exporter(self.session.tick, "127.0.0.1", 0, 0.2, "test",
                                                            hostname=hostname)
        for name, value in server.items():
            setattr(self.server, name, value)
        self.port = self.server.server_port
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
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


class StaticExporter:
    """An exporter serving one fixed frame of a demo machine (GPUs read by the real probe from the fake NVML):
    no sampler, so no probe threads compete for the CPU while a test measures the server."""

    def __init__(self, profile: str = "rtx3090", hostname: str | None = None, **server: float) -> None:
        frame = Frame(demo_snapshots(profile, count=2)[-1])
        self.server, self.stop, self.latest = make_exporter(lambda: frame, "127.0.0.1", 0, 3600.0, "test",
                                                            hostname=hostname)
        for name, value in server.items():
            setattr(self.server, name, value)
        self.port = self.server.server_port
        self.url = f"http://127.0.0.1:{self.port}/metrics"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        first = threading.Event()
        self.latest.when_ready(first.set)
        first.wait(10)

    def close(self) -> None:
        self.stop.set()
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def exporter():
    running = Exporter()
    yield running
    running.close()


@pytest.fixture
def h200():
    running = StaticExporter("h200", hostname="node-h200")
    yield running
    running.close()


@pytest.fixture(scope="module")
def dgx():
    running = StaticExporter("dgx-a100")
    yield running
    running.close()


def scrape(url: str) -> str:
    with urllib.request.urlopen(url, timeout=10) as response:
        return response.read().decode()


def test_eight_gpus_with_dcgm_labels_in_dcgm_order(dgx):
    text = scrape(dgx.url)
    families_ = {f.name: f for f in text_string_to_metric_families(text)}
    util = families_["DCGM_FI_DEV_GPU_UTIL"].samples
    assert len(util) == 8 and {s.labels["gpu"] for s in util} == {str(i) for i in range(8)}
    assert {s.labels["modelName"] for s in util} == {"NVIDIA A100-SXM4-80GB"}
    assert {s.labels["device"] for s in util} == {f"nvidia{i}" for i in range(8)}
    line = next(x for x in text.splitlines() if x.startswith('DCGM_FI_DEV_GPU_UTIL{gpu="0"'))
    assert tuple(re.findall(r'(\w+)="', line)) == DCGM_LABELS
    # deprecated names (KB/s rates under names dcgm-exporter now types as counters) are gone
    assert "DCGM_FI_DEV_PCIE_TX_THROUGHPUT" not in families_ and "DCGM_FI_DEV_POWER_MGMT_LIMIT" not in families_
    assert {"hwtop_cpu_core_busy_percent", "hwtop_numa_memory_total_bytes", "hwtop_disk_read_bytes_per_second",
            "hwtop_finding", "hwtop_workload_steps_per_second", "hwtop_workload_data_wait_ratio"} <= set(families_)


def test_a_gpm_card_exports_dcgm_parity_fields_with_dcgm_units_and_types(h200):
    text = scrape(h200.url)
    types = dict(re.findall(r"^# TYPE (\S+) (\S+)$", text, re.M))
    assert {name: types.get(name) for name in DCGM_TYPES} == DCGM_TYPES
    values = {f.name: f.samples[0].value for f in text_string_to_metric_families(text) if f.samples}
    gpu = h200.latest.frame.snapshot.gpus[0]
    assert gpu.gpm is not None and gpu.pcie is not None and gpu.memory_used_bytes is not None
    fb_used = re.search(r"^DCGM_FI_DEV_FB_USED\{.*\} (\S+)$", text, re.M)
    assert fb_used and fb_used.group(1) == str(gpu.memory_used_bytes // MIB)  # whole MiB, as DCGM prints it
    assert values["DCGM_FI_DEV_FB_RESERVED"] == (gpu.memory_reserved_bytes or 0) // MIB > 0
    assert values["DCGM_FI_PROF_PIPE_TENSOR_ACTIVE"] == pytest.approx(gpu.gpm.tensor_activity_percent / 100)
    assert 0 < values["DCGM_FI_PROF_PIPE_TENSOR_ACTIVE"] < 1
    assert values["DCGM_FI_PROF_DRAM_ACTIVE"] == pytest.approx(gpu.gpm.dram_bw_util_percent / 100)
    assert values["DCGM_FI_PROF_PCIE_TX_BYTES"] == pytest.approx(gpu.pcie.tx_bytes_per_s)
    assert values["DCGM_FI_DEV_ENFORCED_POWER_LIMIT"] == 700
    assert "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE" in text and 'Hostname="node-h200"' in text


def test_fields_the_probe_may_add_are_exported_with_dcgm_semantics():
    """Energy (a counter, mJ), the last XID (a gauge) and the graphics-engine ratio, from a snapshot that has
    them; a GPU lacking a field has no sample (as with dcgm-exporter), never a 0."""
    gpu = replace(demo_snapshots("h200", count=2)[-1].gpus[0], energy_mj=123_456_789, xid_last=79,
                              pcie_replays=3, gpm=GpmMetrics(50.0, 25.0, 31.5, 40.0, graphics_activity_percent=88.0))
    other = replace(gpu, index=1, uuid="GPU-other", energy_mj=None, gpm=None)
    snapshot = replace(host_snapshot(), gpus=(gpu, other))
    text = render(families(snapshot, (), "t")).decode()
    assert re.search(r'^DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION\{gpu="0",.*\} 123456789$', text, re.M)
    assert "# TYPE DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION counter" in text
    assert not re.search(r'^DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION\{gpu="1"', text, re.M)
    assert re.search(r'^DCGM_FI_DEV_XID_ERRORS\{gpu="0",.*\} 79$', text, re.M)
    assert re.search(r'^DCGM_FI_PROF_GR_ENGINE_ACTIVE\{gpu="0",.*\} 0.88$', text, re.M)
    assert re.search(r'^DCGM_FI_DEV_PCIE_REPLAY_COUNTER\{gpu="0",.*\} 3$', text, re.M)
    parsed = {f.name: f for f in text_string_to_metric_families(text)}
    assert parsed["DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION"].type == "counter"


def test_gpu_faults_are_exported_under_dcgm_s_names_and_units():
    """The row remapper (counts as counters, pending and failure as 0/1 gauges), NVLink errors summed over the
    links, violation time in ns as NVML and DCGM give it; a GPU that does not report them has no sample."""
    gpu = replace(demo_snapshots("h200", count=2)[-1].gpus[0], row_remap=RowRemap(3, 1, True, False),
                  nvlink_errors=NvlinkErrors(crc_flit=40, crc_data=0, replay=7, recovery=None),
                  power_violation_ns=12_000_000_000, thermal_violation_ns=0)
    bare = replace(gpu, index=1, uuid="GPU-other", row_remap=None, nvlink_errors=None, power_violation_ns=None,
                   thermal_violation_ns=None)
    text = render(families(replace(host_snapshot(), gpus=(gpu, bare)), (), "t")).decode()
    samples = {(f.name, s.labels["gpu"]): s.value for f in text_string_to_metric_families(text) for s in f.samples
               if f.name.startswith("DCGM_FI_DEV_") and s.labels.get("gpu") in ("0", "1")}
    assert {name: value for (name, index), value in samples.items() if index == "0" and (
        "REMAP" in name or "NVLINK" in name or "VIOLATION" in name)} == {
        "DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS": 3, "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS": 1,
        "DCGM_FI_DEV_ROW_REMAP_FAILURE": 0, "DCGM_FI_DEV_ROW_REMAP_PENDING": 1,
        "DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL": 40, "DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL": 0,
        "DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL": 7, "DCGM_FI_DEV_POWER_VIOLATION": 12e9,
        "DCGM_FI_DEV_THERMAL_VIOLATION": 0}
    assert not [name for (name, index) in samples if index == "1" and (
        "REMAP" in name or "NVLINK" in name or "VIOLATION" in name)]
    assert "# HELP DCGM_FI_DEV_POWER_VIOLATION Throttling duration due to power constraints (in ns)." in text


def test_findings_step_rate_and_data_wait_are_hwtop_series():
    finding = Finding("gpu-throttled", "warning", "GPU3 is throttled", (), (), scope="GPU3")
    again = replace(finding, title="the same finding, listed twice")
    other = Finding("dataloader-bound", "critical", "waiting for data", (), (), scope="job")
    rank = RankState(0, 41000, 10, 0.25, 512.0, 0.4, 1.0, "bf16", None, 128, None)
    workload = WorkloadState("dataloader-bound", "running", None, (rank,), None)
    snapshot = replace(host_snapshot(), workload=workload)
    parsed = {f.name: f for f in text_string_to_metric_families(
        render(families(snapshot, (finding, again, other), "t")).decode())}
    found = {(s.labels["rule"], s.labels["severity"], s.labels["scope"], s.labels["Hostname"]): s.value
             for s in parsed["hwtop_finding"].samples}
    assert found == {("gpu-throttled", "warning", "GPU3", "trainbox"): 1.0,
                     ("dataloader-bound", "critical", "job", "trainbox"): 1.0}
    assert parsed["hwtop_workload_steps_per_second"].samples[0].value == 4.0
    assert parsed["hwtop_workload_data_wait_ratio"].samples[0].value == 0.4


def test_hostile_label_values_cannot_forge_series():
    snapshot = replace(host_snapshot(), host=replace(
        host_snapshot().host, hostname='evil"} 1\nDCGM_FI_DEV_GPU_UTIL{gpu="9"} 100 \\'))
    text = render(families(snapshot, (), "t")).decode()
    parsed = {f.name: f for f in text_string_to_metric_families(text)}
    assert parsed["hwtop_info"].samples[0].labels["Hostname"] == snapshot.host.hostname
    assert "DCGM_FI_DEV_GPU_UTIL" not in {s.name for f in parsed.values() for s in f.samples}


def test_text_format_keeps_names_types_and_label_order():
    family = Family("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "Total energy (in mJ).", ("gpu", "Hostname"), "counter")
    family.add(("0", "h"), 5.0)
    family.add(("1", "h"), 2.5)
    assert render([family]) == (b"# HELP DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION Total energy (in mJ).\n"
                                b"# TYPE DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION counter\n"
                                b'DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{gpu="0",Hostname="h"} 5\n'
                                b'DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{gpu="1",Hostname="h"} 2.5\n')
    assert {f.name for f in DCGM_FIELDS} >= set(DCGM_TYPES) - {"DCGM_FI_DEV_FB_TOTAL"}


@pytest.mark.slow  # over the fast suite's minute on two cores (--durations)
def test_a_scrape_costs_no_nvml_call(exporter):
    exporter.stop.set()  # freeze the sampler: from here, only scrapes run
    time.sleep(0.5)
    before = sum(exporter.fake.calls.values())
    for _ in range(5):
        scrape(exporter.url)
    assert sum(exporter.fake.calls.values()) == before


def test_only_metrics_is_served(dgx):
    for path in ("/", "/metrics/", "/favicon.ico", "/../etc/passwd", "/%6detrics/.."):
        with pytest.raises(urllib.error.HTTPError) as error:
            urllib.request.urlopen(f"http://127.0.0.1:{dgx.port}{path}", timeout=5)
        assert error.value.code == 404
    request = urllib.request.Request(dgx.url, data=b"x=1", method="POST")
    with pytest.raises(urllib.error.HTTPError) as error:
        urllib.request.urlopen(request, timeout=5)
    assert error.value.code == 404


def _raw(port: int, payload: bytes, timeout: float = 5.0) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
        sock.sendall(payload)
        chunks = []
        while chunk := sock.recv(65536):
            chunks.append(chunk)
        return b"".join(chunks)


def test_keep_alive_head_and_garbage(dgx):
    two = _raw(dgx.port, b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n"
                              b"HEAD /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    assert two.count(b"HTTP/1.1 200 OK") == 2 and two.count(b"# TYPE DCGM_FI_DEV_GPU_UTIL gauge") == 1
    assert _raw(dgx.port, b"\x16\x03\x01\x02\x00garbage\r\n\r\n").startswith(b"HTTP/1.1 400")
    assert _raw(dgx.port, b"GET /" + b"a" * 20000 + b" HTTP/1.1\r\n\r\n") == b""  # head too long: closed


def test_a_silent_connection_is_closed_after_the_read_timeout():
    running = StaticExporter(read_timeout=0.3)
    try:
        with socket.create_connection(("127.0.0.1", running.port), timeout=5) as sock:
            sock.sendall(b"GET /metrics HTTP/1.1\r\n")  # half a request head, then nothing
            started = time.monotonic()
            assert sock.recv(100) == b""
            assert 0.2 < time.monotonic() - started < 3
    finally:
        running.close()


@pytest.mark.slow  # over the fast suite's minute on two cores (--durations)
def test_2000_idle_connections_keep_threads_constant_and_scrapes_fast():
    """2,000 half-open connections cost no thread each, and a normal scrape still answers (within scrape()'s
    10 s timeout: a server that gave each connection a worker from a pool would leave it waiting behind them). How
    fast it answers is benchmarks/ work, not a test's."""
    running = StaticExporter()
    sockets: list[socket.socket] = []
    try:
        threads_before = threading.active_count()
        for i in range(2000):
            sock = socket.create_connection(("127.0.0.1", running.port), timeout=5)
            if i % 2:
                sock.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n")  # half a head
            sockets.append(sock)
        deadline = time.monotonic() + 20
        while running.server.open_connections < 2000 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert running.server.open_connections == 2000
        assert threading.active_count() <= threads_before  # (threads of earlier tests may still be ending)
        assert "DCGM_FI_DEV_GPU_UTIL" in scrape(running.url)
    finally:
        for sock in sockets:
            sock.close()
        running.close()


def test_over_the_connection_cap_the_oldest_idle_one_is_closed():
    running = StaticExporter(max_connections=8)
    sockets = [socket.create_connection(("127.0.0.1", running.port), timeout=5) for _ in range(8)]
    try:
        deadline = time.monotonic() + 10
        while running.server.open_connections < 8 and time.monotonic() < deadline:
            time.sleep(0.02)
        assert "DCGM_FI_DEV_GPU_UTIL" in scrape(running.url)  # the ninth gets in
        assert sockets[0].recv(10) == b"" and running.server.evicted >= 1
    finally:
        for sock in sockets:
            sock.close()
        running.close()


@pytest.mark.slow  # over the fast suite's minute on two cores (--durations)
def test_the_command_binds_127_0_0_1_by_default_refuses_a_taken_port_and_ends_cleanly():
    port = free_port()
    process = subprocess.Popen([*HWTOP, "--demo", "rtx3090", "export", "--listen", f":{port}"],
                               stderr=subprocess.PIPE, text=True)
    try:
        assert process.stderr is not None
        line = process.stderr.readline()
        assert line.strip() == f"serving http://127.0.0.1:{port}/metrics (ctrl-c stops)"  # no warning line first
        taken = subprocess.run([*HWTOP, "--demo", "rtx3090", "export", "--listen", f"127.0.0.1:{port}"],
                               capture_output=True, text=True, timeout=30)
        assert taken.returncode == 2 and "Address already in use" in taken.stderr
        listening = subprocess.run(["ss", "-ltnH", f"sport = :{port}"], capture_output=True, text=True)
        if listening.returncode == 0:  # the local address column: bound to loopback only
            assert [line.split()[3] for line in listening.stdout.splitlines()] == [f"127.0.0.1:{port}"]
        idle = socket.create_connection(("127.0.0.1", port), timeout=5)  # open while it stops
    finally:
        process.terminate()
        _, err = process.communicate(timeout=10)
    idle.close()
    assert process.returncode == 0 and "Traceback" not in err and "Exception" not in err


class _FakeServer:
    server_port = 9400

    def __init__(self) -> None:
        self.stopped = False

    def serve_forever(self, poll_interval: float = 0.5) -> None:
        raise KeyboardInterrupt

    def stop_soon(self) -> None:
        self.stopped = True

    def server_close(self) -> None:
        pass


@pytest.mark.parametrize(("listen", "warned"), [("0.0.0.0:9400", True), ("[::]:9400", True), ("10.1.2.3:9400", True),
                                                ("gpu-node-7:9400", True), ("127.0.0.1:9400", False),
                                                ("[::1]:9400", False), ("localhost:9400", False)])
def test_listening_beyond_loopback_warns_once(monkeypatch, listen, warned):
    """Nothing is bound here: the server is a stand-in; the warning is what the command prints."""
    from hwtop.cli import main as cli
    from hwtop.exporter import server

    seen = {}

    def fake_make_exporter(tick, host, port, interval, version, hostname=None, job_name=None):  # noqa: ANN001
        seen.update(host=host, hostname=hostname)
        return _FakeServer(), threading.Event(), None

    monkeypatch.setattr(server, "make_exporter", fake_make_exporter)
    monkeypatch.setenv("NODE_NAME", "k8s-node-3")
    err = io.StringIO()
    with redirect_stderr(err):
        assert cli.main(["--demo", "rtx3090", "export", "--listen", listen]) == 0
    lines = err.getvalue().splitlines()
    warnings = [line for line in lines if line.startswith("hwtop: warning:")]
    assert len(warnings) == (1 if warned else 0)
    if warned:
        assert "no authentication" in warnings[0] and seen["host"] in warnings[0]
    assert seen["hostname"] == "k8s-node-3"  # $NODE_NAME, as dcgm-exporter takes it


@pytest.mark.parametrize(("listen", "message"), [("9400", "expected HOST:PORT"), ("h:99999", "port must be 1-65535"),
                                                 ("h:x", "not a port number")])
@pytest.mark.slow  # over the fast suite's minute on two cores (--durations)
def test_bad_listen_address_exits_2(listen, message):
    result = subprocess.run([*HWTOP, "export", "--listen", listen], capture_output=True, text=True, timeout=30)
    assert result.returncode == 2 and message in result.stderr and len(result.stderr.strip().splitlines()) == 1


def test_the_wsgi_app_answers_only_get_and_head_metrics():
    statuses = []
    app = metrics_app(type("Empty", (), {"collect": lambda self: iter(())})())
    for method, path in (("GET", "/metrics"), ("HEAD", "/metrics"), ("GET", "/"), ("DELETE", "/metrics")):
        app({"REQUEST_METHOD": method, "PATH_INFO": path}, lambda status, headers: statuses.append(status))
    assert statuses == ["200 OK", "200 OK", "404 Not Found", "404 Not Found"]
