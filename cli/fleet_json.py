"""`hwtop fleet ... --json`: one round read, printed as JSON for scripts and tests (the hosts, worst first, and
with --job the job's ranks, worst first, and its verdict; through Prometheus without --job, the jobs it holds,
hangs and stragglers first). Exit 0 when the source answered, 1 when it did not."""

from __future__ import annotations

import json
import time

from hwtop.fleet.model import HostView
from hwtop.fleet.session import FleetSession
from hwtop.fleet.sources import WAITING, FleetSource


def host_dict(view: HostView) -> dict[str, object]:
    top = view.top_finding
    return {"host": view.name, "address": view.address, "up": view.up, "error": view.error, "gpus": len(view.gpus),
            "gpu_models": view.gpu_models, "util_mean": view.util_mean, "cpu_busy": view.cpu_busy,
            "hwtop": view.hwtop, "owners": list(view.owners), "top_finding": None if top is None else
            {"rule": top.rule, "severity": top.severity, "scope": top.scope},
            "findings": [{"rule": f.rule, "severity": f.severity, "scope": f.scope} for f in view.findings]}


def fleet_json(source: FleetSource, timeout: float, alerts: bool = False) -> int:
    """Rounds on this thread until every host has answered or passed its deadline (each request has its own,
    so this ends). `alerts` (--alerts): Prometheus's alerts instead (fleet/alerts.py)."""
    session = FleetSession(source)
    session.ask(source.job, source.job is None and not alerts)  # the job list: Prometheus only
    frame = session.round()
    deadline = time.monotonic() + timeout + 5.0
    while any(h.error == WAITING for h in frame.hosts) and time.monotonic() < deadline:
        frame = session.round()
    if alerts:
        from hwtop.fleet.alerts import alerts_document, answered

        print(json.dumps(alerts_document(frame, time.time()), indent=1))
        return 0 if answered(frame) else 1
    out: dict[str, object] = {"source": source.description, "problem": frame.problem,
                              "hosts": [host_dict(h) for h in frame.hosts],
                              "summary": {"hosts": frame.summary.hosts, "up": frame.summary.up,
                                          "gpus": frame.summary.gpus, "idle_gpus": frame.summary.idle_gpus,
                                          "findings": dict(frame.summary.findings)},
                              "round_s": round(frame.round_s, 3)}
    if frame.job is not None:
        out["job"] = frame.job.to_dict(time.time())
    if frame.jobs is not None:
        out["jobs"] = [row.to_dict(time.time()) for row in frame.jobs.jobs]
        out["jobs_message"] = frame.jobs.message
        out["jobs_left_out"] = frame.jobs.left_out
    print(json.dumps(out, indent=1))
    if frame.problem is not None and not frame.problem.startswith("partial answer"):
        return 1
    return 0 if frame.job is not None or frame.jobs is not None or any(h.up for h in frame.hosts) else 1
