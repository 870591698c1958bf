"""A real Prometheus on a free loopback port, scraping hwtop exporters (subprocesses of demo profiles) and
hand-made dcgm-exporter / node-exporter pages, for the slow tests and for recording the fast suite's fixtures
(`python -m tests.prometheus_rig FIXTURE_DIR`). Everything listens on 127.0.0.1 and is stopped on close; every
wait is bounded."""

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
import urllib.parse
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

PROMETHEUS = shutil.which("prometheus")
HWTOP = [sys.executable, "-m", "hwtop"]
ROOT = Path(__file__).resolve().parents[1]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def get_json(url: str, timeout: float = 10.0) -> dict:
    with urllib.request.urlopen(url, timeout=timeout) as response:  # noqa: S310 - a loopback http URL
        return json.loads(response.read())


def stop(process: subprocess.Popen[str] | subprocess.Popen[bytes], grace_s: float) -> None:
    """SIGTERM, then SIGKILL for a process still there after `grace_s` seconds."""
    process.terminate()
    try:
        process.wait(grace_s)
    except subprocess.TimeoutExpired:
        process.kill()


class HwtopExporter:
    """`hwtop --demo PROFILE export` as its own process, named `hostname`."""

    def __init__(self, profile: str, hostname: str, extra: tuple[str, ...] = ()) -> None:
        self.port = free_port()
        self.process = subprocess.Popen([*HWTOP, "--demo", profile, "export", "--listen", f"127.0.0.1:{self.port}",
                                         "--hostname", hostname, "--interval", "0.5", *extra],
                                        stderr=subprocess.PIPE, text=True, cwd=ROOT)
        assert self.process.stderr is not None
        line = self.process.stderr.readline()
        if "serving" not in line:
            raise RuntimeError(f"hwtop export did not start: {line!r}")

    @property
    def target(self) -> str:
        return f"127.0.0.1:{self.port}"

    def close(self) -> None:
        stop(self.process, grace_s=10)


# A dcgm-exporter page as dcgm-exporter 3.x/4.x writes one (its label order; `hostname` spelt in lower case on
# node-b, as its 2026 releases do; node-b's older exporter has no FB_RESERVED and no profiling fields).
_GPU = ('gpu="{i}",UUID="{uuid}",pci_bus_id="00000000:{bus}:00.0",device="nvidia{i}",modelName="{model}",'
        '{hostlabel}="{host}",DCGM_FI_DRIVER_VERSION="550.90.07"')
DCGM_HOSTS = {
    "node-a": dict(hostlabel="Hostname", model="NVIDIA H100 80GB HBM3",
                   gpus=[dict(uuid="GPU-0a0a0a0a-0000-4000-8000-00000000000a", bus="18", util=97, used=61440,
                              free=19520, reserved=545, temp=71, power=655.5, tensor=0.42),
                         dict(uuid="GPU-0a0a0a0a-0000-4000-8000-00000000000b", bus="2A", util=12, used=1024,
                              free=79936, reserved=545, temp=45, power=120.25, tensor=0.01)]),
    "node-b": dict(hostlabel="hostname", model="NVIDIA A100-SXM4-40GB",
                   gpus=[dict(uuid="GPU-0b0b0b0b-0000-4000-8000-00000000000a", bus="07", util=55, used=30000,
                              free=10536, reserved=None, temp=60, power=250.0, tensor=None)]),
}


def dcgm_page(host: str) -> str:
    spec = DCGM_HOSTS[host]
    fields = [("DCGM_FI_DEV_GPU_UTIL", "gauge", "GPU utilization (in %).", "util"),
              ("DCGM_FI_DEV_FB_FREE", "gauge", "Framebuffer memory free (in MiB).", "free"),
              ("DCGM_FI_DEV_FB_USED", "gauge", "Framebuffer memory used (in MiB).", "used"),
              ("DCGM_FI_DEV_FB_RESERVED", "gauge", "Framebuffer memory reserved (in MiB).", "reserved"),
              ("DCGM_FI_DEV_GPU_TEMP", "gauge", "GPU temperature (in C).", "temp"),
              ("DCGM_FI_DEV_POWER_USAGE", "gauge", "Power draw (in W).", "power"),
              ("DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "gauge", "Ratio of cycles the tensor (HMMA) pipe is active.",
               "tensor")]
    lines = []
    for name, kind, help_, key in fields:
        rows = [(i, g) for i, g in enumerate(spec["gpus"]) if g[key] is not None]
        if not rows:
            continue
        lines += [f"# HELP {name} {help_}", f"# TYPE {name} {kind}"]
        for i, gpu in rows:
            labels = _GPU.format(i=i, uuid=gpu["uuid"], bus=gpu["bus"], model=spec["model"],
                                 hostlabel=spec["hostlabel"], host=host)
            lines.append(f"{name}{{{labels}}} {gpu[key]}")
    return "\n".join(lines) + "\n"


def node_page(nodename: str, started: float, busy: float = 0.6, cpus: int = 2) -> str:
    elapsed = 1000.0 + time.time() - started
    lines = ["# HELP node_cpu_seconds_total Seconds the CPUs spent in each mode.",
             "# TYPE node_cpu_seconds_total counter"]
    for cpu in range(cpus):
        lines.append(f'node_cpu_seconds_total{{cpu="{cpu}",mode="idle"}} {elapsed * (1 - busy):.3f}')
        lines.append(f'node_cpu_seconds_total{{cpu="{cpu}",mode="user"}} {elapsed * busy:.3f}')
    lines += ["# HELP node_uname_info Labeled system information as provided by the uname system call.",
              "# TYPE node_uname_info gauge",
              f'node_uname_info{{domainname="(none)",machine="x86_64",nodename="{nodename}",release="6.1.0",'
              f'sysname="Linux",version="#1 SMP"}} 1']
    return "\n".join(lines) + "\n"


class PageServer:
    """Serves /<name> → text from `pages` (callables, so counters move) on a free loopback port."""

    def __init__(self, pages: dict[str, object]) -> None:
        pages_ = pages

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 - http.server's name
                make = pages_.get(self.path.lstrip("/"))
                if make is None:
                    self.send_error(404)
                    return
                body = make().encode()  # type: ignore[operator]
                self.send_response(200)
                self.send_header("Content-Type", "text/plain; version=0.0.4")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: object) -> None:  # noqa: A002
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.2}, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


class Prometheus:
    """Debian's prometheus with `jobs` (name → list of (target address, metrics path, extra target labels)),
    evaluating the rule files `rules` (alerting rules: deploy/hwtop-alerts.yml); its external URL (what an
    alert's commands name, as an operator sets --web.external-url) is `external_url`, else its own address."""

    def __init__(self, jobs: dict[str, list[tuple[str, str, dict[str, str]]]], rules: tuple[Path, ...] = (),
                 external_url: str | None = None) -> None:
        if PROMETHEUS is None:
            raise RuntimeError("prometheus is not installed")
        self.dir = tempfile.TemporaryDirectory(prefix="hwtop-prom-")
        self.port = free_port()
        config = {"global": {"scrape_interval": "1s", "scrape_timeout": "900ms", "evaluation_interval": "1s"},
                  "scrape_configs": [
                      {"job_name": job, "metrics_path": targets[0][1],
                       "static_configs": [{"targets": [address], "labels": labels} for address, _, labels in targets]}
                      for job, targets in jobs.items()]}
        if rules:
            config["rule_files"] = [str(path.resolve()) for path in rules]
        path = Path(self.dir.name) / "prometheus.yml"
        path.write_text(json.dumps(config, indent=1))  # JSON is YAML
        self.log = open(Path(self.dir.name) / "log", "w")  # noqa: SIM115 - closed in close()
        self.process = subprocess.Popen([PROMETHEUS, f"--config.file={path}",
                                         f"--storage.tsdb.path={self.dir.name}/tsdb",
                                         f"--web.listen-address=127.0.0.1:{self.port}",
                                         f"--web.external-url={external_url or f'http://127.0.0.1:{self.port}'}"],
                                        stdout=self.log, stderr=subprocess.STDOUT)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def query(self, promql: str) -> list[dict]:
        data = get_json(f"{self.url}/api/v1/query?{urllib.parse.urlencode({'query': promql})}")
        assert data["status"] == "success", data
        return data["data"]["result"]

    def wait_for_scrapes(self, targets: int, scrapes: int = 2, timeout: float = 90.0) -> None:
        """Until every one of `targets` targets has been scraped `scrapes` times (up or down)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                counts = self.query("count_over_time(up[5m])")
                if len(counts) >= targets and all(float(r["value"][1]) >= scrapes for r in counts):
                    return
            except (urllib.error.URLError, OSError, KeyError, ValueError, AssertionError):
                pass
            time.sleep(0.5)
        raise TimeoutError(f"Prometheus did not scrape {targets} targets {scrapes} times in {timeout:g} s")

    def close(self) -> None:
        stop(self.process, grace_s=20)
        self.log.close()
        self.dir.cleanup()


class HwtopFleet:
    """Two hwtop exporters with different demo profiles (dgx-a100 as node-dgx, h200 as node-h200) and one dead
    target, all in job `train`, scraped by a real Prometheus."""

    def __init__(self) -> None:
        self.exporters = [HwtopExporter("dgx-a100", "node-dgx"), HwtopExporter("h200", "node-h200")]
        self.dead = f"127.0.0.1:{free_port()}"
        targets = [(e.target, "/metrics", {}) for e in self.exporters] + [(self.dead, "/metrics", {})]
        self.prometheus = Prometheus({"train": targets})
        self.targets = len(targets)

    def close(self) -> None:
        self.prometheus.close()
        for exporter in self.exporters:
            exporter.close()


class DcgmFleet:
    """Plain dcgm-exporter and node-exporter pages: node-a (2 GPUs, also scraped by a second job under another
    instance name: a duplicate), node-b (1 GPU, lower-case `hostname`, node-exporter nodename with a domain),
    node-c's node-exporter dead."""

    def __init__(self) -> None:
        started = time.time()
        self.pages = PageServer({"dcgm/node-a": lambda: dcgm_page("node-a"), "dcgm/node-b": lambda: dcgm_page("node-b"),
                                 "node/node-a": lambda: node_page("node-a", started, 0.25),
                                 "node/node-b": lambda: node_page("node-b.cluster.local", started, 0.6)})
        page = f"127.0.0.1:{self.pages.port}"
        dead = f"127.0.0.1:{free_port()}"

        def at(instance: str, path: str) -> tuple[str, str, dict[str, str]]:
            return (page, path, {"instance": instance})

        self.prometheus = Prometheus({
            "dcgm-a": [at("node-a:9400", "/dcgm/node-a")],
            "dcgm-b": [at("node-b:9400", "/dcgm/node-b")],
            "dcgm-again": [at("node-a.example.com:9400", "/dcgm/node-a")],
            "node-a": [at("node-a:9100", "/node/node-a")],
            "node-b": [at("node-b:9100", "/node/node-b")],
            "node-c": [(dead, "/metrics", {"instance": "node-c:9100"})],
        })
        self.targets = 6

    def close(self) -> None:
        self.prometheus.close()
        self.pages.close()


def record(fleet: HwtopFleet | DcgmFleet, matchers: str, out: Path, note: str, settle_s: float,
           host: str | None = None) -> None:
    """Asks the fleet view's own queries and stores each answer, as the fast suite replays them (`host`: with
    that host's screen open)."""
    from hwtop.fleet.prometheus import queries

    prometheus = fleet.prometheus
    prometheus.wait_for_scrapes(fleet.targets)
    time.sleep(settle_s)  # a few more scrapes, so the rate() and the range query have points
    now = time.time()
    version = get_json(f"{prometheus.url}/api/v1/status/buildinfo")["data"]["version"]
    answers = {}
    for query in queries(matchers, now, with_targets=True, host=host):
        answers[query.key] = {"query": query.promql, "path": query.path, "body": get_json(query.url(prometheus.url))}
    out.write_text(json.dumps({"note": note, "prometheus": version, "matchers": matchers, "now": now,
                               "answers": answers}, indent=1) + "\n")


def main() -> int:
    out = Path(sys.argv[1] if len(sys.argv) > 1 else ROOT / "tests" / "fixtures" / "prometheus")
    out.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("PYTHONPATH", str(ROOT))
    hwtop = HwtopFleet()
    try:
        record(hwtop, 'job="train"', out / "hwtop-two-hosts.json",
               "Prometheus scraping two `hwtop export` demo processes (dgx-a100 as node-dgx, h200 as node-h200) "
               "and a closed port, job train, node-h200's screen open; recorded by python -m tests.prometheus_rig",
               settle_s=45, host="node-h200")
    finally:
        hwtop.close()
    dcgm = DcgmFleet()
    try:
        record(dcgm, "", out / "dcgm-node-exporter.json",
               "Prometheus scraping dcgm-exporter-format pages (node-a twice, under two jobs; node-b with the "
               "lower-case hostname label) and node-exporter pages (node-c dead); recorded by "
               "python -m tests.prometheus_rig; node-b's screen open (its lower-case label)",
               settle_s=130, host="node-b")  # rate(...[2m]) needs 2 minutes of samples
    finally:
        dcgm.close()
    print(f"recorded into {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
