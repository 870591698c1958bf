"""`hwtop fleet ... --json`: one round read, printed as JSON for scripts and tests (the hosts, worst first, and
with --job the job's ranks, worst first, and its verdict; through Prometheus without --job, the jobs it holds,
hangs and stragglers first). Exit 0 when the source answered, 1 when it did not."""

from __future__ import annotations

import json
import time

from hwtop.fleet.model import HostView, worst_first
from hwtop.fleet.sources import WAITING, FleetSource


def host_dict(view: HostView) -> dict[str, object]:
    top = view.top_finding
    return {"host": view.name, "address": view.address, "up": view.up, "error": view.error, "gpus": len(view.gpus),
            "gpu_models": view.gpu_models, "util_mean": view.util_mean, "cpu_busy": view.cpu_busy,
            "hwtop": view.hwtop, "top_finding": None if top is None else
            {"rule": top.rule, "severity": top.severity, "scope": top.scope},
            "findings": [{"rule": f.rule, "severity": f.severity, "scope": f.scope} for f in view.findings]}


def fleet_json(source: FleetSource, timeout: float) -> int:
    """Polls until every first answer is in (each request has its own deadline, so this ends), then prints."""
    source.list_jobs(source.job is None)  # Prometheus only: exporters read directly hold no job list
    deadline = time.monotonic() + timeout + 5.0
    while time.monotonic() < deadline:
        source.poll()
        if source.problem() != WAITING and not any(v.error == WAITING for v in source.hosts()):
            break
        time.sleep(0.02)
    hosts = worst_first(source.hosts())
    job = source.job_view()
    problem = source.problem()
    out: dict[str, object] = {"source": source.description, "problem": problem,
                              "hosts": [host_dict(h) for h in hosts]}
    if job is not None:
        out["job"] = job.to_dict(time.time())
    listed = source.jobs()
    if listed is not None:
        out["jobs"] = [row.to_dict(time.time()) for row in listed.jobs]
        out["jobs_message"] = listed.message
        out["jobs_left_out"] = listed.left_out
    print(json.dumps(out, indent=1))
    if problem is not None and not problem.startswith("partial answer"):
        return 1
    return 0 if job is not None or listed is not None or any(h.up for h in hosts) else 1
