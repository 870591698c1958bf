"""A real Prometheus evaluating deploy/hwtop-alerts.yml (scrape and evaluation every second) over one
`hwtop export --demo dgx-a100 --scenario nccl-hang` on a free loopback port, as the slow tests and the fixture's
recording use it (`python -m tests.deploy.alerts_rig`: tests/fixtures/prometheus/alerts-nccl-hang.json, the
/api/v1/alerts answer once the hang alert fires). Every wait is bounded; close() stops both."""

from __future__ import annotations

import json
import subprocess
import sys
import time
import urllib.parse

from tests.prometheus_rig import ROOT, Prometheus, free_port, get_json, stop

RULES = ROOT / "deploy" / "hwtop-alerts.yml"
FIXTURE = ROOT / "tests" / "fixtures" / "prometheus" / "alerts-nccl-hang.json"
HOST = "node-hang"


class HangRig:
    """`host`: the exporter's Hostname; `job_name`: its job's (default: hwtop's name for the demo's job, `pid N`);
    `external_url`: Prometheus's, which the alerts' commands name (default: its own loopback address)."""

    def __init__(self, host: str = HOST, job_name: str | None = None, external_url: str | None = None) -> None:
        self.port = free_port()
        # the command line, with the address, the host's name and a faster tick
        self.exporter = subprocess.Popen(
            [sys.executable, "-m", "hwtop", "export", "--demo", "dgx-a100", "--scenario", "nccl-hang", "--listen",
             f"127.0.0.1:{self.port}", "--hostname", host, "--interval", "0.5",
             *(("--job-name", job_name) if job_name else ())],
            stderr=subprocess.PIPE, text=True, cwd=ROOT)
        assert self.exporter.stderr is not None
        line = self.exporter.stderr.readline()
        if "serving" not in line:
            stop(self.exporter, 10)
            raise RuntimeError(f"hwtop export did not start: {line!r}")
        self.prometheus = Prometheus({"hwtop": [(f"127.0.0.1:{self.port}", "/metrics", {})]}, rules=(RULES,),
                                     external_url=external_url)

    def query_range(self, promql: str, start: float, end: float, step: float) -> list[dict]:
        query = urllib.parse.urlencode({"query": promql, "start": f"{start:.3f}", "end": f"{end:.3f}",
                                        "step": f"{step:g}"})
        return get_json(f"{self.prometheus.url}/api/v1/query_range?{query}")["data"]["result"]

    def alerts(self) -> list[dict]:
        return get_json(f"{self.prometheus.url}/api/v1/alerts")["data"]["alerts"]

    def wait_for(self, name: str, state: str = "firing", timeout: float = 150.0) -> dict:
        """The first alert `name` in `state`; TimeoutError after `timeout` seconds."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                found = [a for a in self.alerts() if a["labels"]["alertname"] == name and a["state"] == state]
            except OSError:
                found = []
            if found:
                return found[0]
            time.sleep(0.5)
        raise TimeoutError(f"no {state} {name} within {timeout:g} s: {self.alerts()}")

    def close(self) -> None:
        self.prometheus.close()
        stop(self.exporter, 10)


def main() -> int:
    rig = HangRig()
    try:
        rig.wait_for("HwtopJobHung")
        body = get_json(f"{rig.prometheus.url}/api/v1/alerts")
        version = get_json(f"{rig.prometheus.url}/api/v1/status/buildinfo")["data"]["version"]
    finally:
        rig.close()
    FIXTURE.write_text(json.dumps({"note": "Prometheus evaluating deploy/hwtop-alerts.yml over `hwtop export --demo "
                                           "dgx-a100 --scenario nccl-hang --hostname node-hang`, once HwtopJobHung "
                                           "fired; recorded by python -m tests.deploy.alerts_rig",
                                   "prometheus": version, "body": body}, indent=1) + "\n")
    print(f"recorded {FIXTURE}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
