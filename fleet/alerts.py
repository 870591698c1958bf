"""Prometheus's alerts (`GET /api/v1/alerts`) as the fleet shows them: firing before pending, critical before
warning before info, the oldest first. An alert's host, job, rank and GPU are its labels (hwtop's and dcgm-exporter's
names: `Hostname`, `job_name`, `rank`, `gpu`, `hpc_job`, `pod`); its commands are the annotations
deploy/hwtop-alerts.yml writes (`hwtop_fleet`, `hwtop_on_host`). Any rule's alert is listed, not only hwtop's.

The answer is someone else's text: decoded into typed records (msgspec), at most MAX_ALERTS alerts kept (the rest
counted), every string cut to MAX_TEXT characters and at most MAX_LABELS labels an alert; the screens render it as
plain text. Plain data and parsing, no I/O."""

from __future__ import annotations

import math
from datetime import datetime
from typing import TYPE_CHECKING

import msgspec

from hwtop.fleet.build import host_of, owner_of
from hwtop.fleet.http import FetchError
from hwtop.fleet.model import SEVERITY_ORDER
from hwtop.fleet.prometheus import Query, instance_host
from hwtop.model.record import Record

if TYPE_CHECKING:  # the frame holds an AlertList: imported for the annotation only
    from hwtop.fleet.frame import FleetFrame

ALERTS = "alerts"  # the query's key in a round
ALERTS_QUERY = Query(ALERTS, "/api/v1/alerts")
MAX_ALERTS = 2000  # kept and sorted; a Prometheus with more firing is not one a person reads row by row
MAX_TEXT = 400  # characters of a label or annotation kept
MAX_LABELS = 64
STATE_ORDER = {"firing": 0, "pending": 1}


class AlertRow(Record, frozen=True):
    """One alert as the fleet shows it. `since`: when it became active (Unix time), None where not said."""

    name: str
    state: str
    severity: str = ""
    host: str = ""
    instance: str = ""
    job: str = ""  # the hwtop job's job_name
    rank: str = ""
    gpu: str = ""
    owner: str = ""  # hpc_job, or namespace/pod
    summary: str = ""
    since: float | None = None
    value: str = ""
    fleet_command: str = ""  # hwtop_fleet: opens it from anywhere
    host_command: str = ""  # hwtop_on_host: opens it on its host
    labels: tuple[tuple[str, str], ...] = ()

    def sort_key(self) -> tuple[int, int, float, str, str]:
        return (STATE_ORDER.get(self.state, 9), SEVERITY_ORDER.get(self.severity, 9),
                math.inf if self.since is None else self.since, self.name, self.host)

    def to_dict(self, now: float) -> dict[str, object]:
        return {"alert": self.name, "state": self.state, "severity": self.severity, "host": self.host or None,
                "instance": self.instance or None, "job": self.job or None, "rank": self.rank or None,
                "gpu": self.gpu or None, "owner": self.owner or None, "summary": self.summary,
                "active_s": None if self.since is None else round(max(0.0, now - self.since), 1),
                "value": self.value, "hwtop_fleet": self.fleet_command or None,
                "hwtop_on_host": self.host_command or None, "labels": dict(self.labels)}


class AlertList(Record, frozen=True):
    """`message` says in one line why there is no list (Prometheus refused the request, a bad answer)."""

    alerts: tuple[AlertRow, ...] = ()
    message: str | None = None
    left_out: int = 0  # alerts beyond MAX_ALERTS

    @property
    def firing(self) -> int:
        return sum(1 for alert in self.alerts if alert.state == "firing")

    @property
    def pending(self) -> int:
        return sum(1 for alert in self.alerts if alert.state == "pending")

    def to_dict(self, now: float) -> dict[str, object]:
        return {"alerts": [alert.to_dict(now) for alert in self.alerts], "firing": self.firing,
                "pending": self.pending, "message": self.message, "left_out": self.left_out}


class _Alert(msgspec.Struct, gc=False):
    labels: dict[str, str] = {}
    annotations: dict[str, str] = {}
    state: str = ""
    activeAt: str | None = None  # noqa: N815 - Prometheus's own key
    value: str = ""


class _Data(msgspec.Struct, gc=False):
    alerts: list[_Alert]


class _Answer(msgspec.Struct, gc=False):
    status: str
    data: _Data | None = None
    error: str | None = None


_ANSWER = msgspec.json.Decoder(_Answer)
_TIME = msgspec.json.Decoder(datetime)


def _cut(text: str) -> str:
    return text if len(text) <= MAX_TEXT else text[:MAX_TEXT - 1] + "…"


def _since(text: str | None) -> float | None:
    """RFC 3339 (Prometheus writes nanoseconds: msgspec reads them); a time before 1970 or unreadable is None."""
    if not text or len(text) > 64:
        return None
    try:
        stamp = _TIME.decode(msgspec.json.encode(text)).timestamp()
    except (msgspec.DecodeError, ValueError, OverflowError):
        return None
    return stamp if stamp > 0 else None


def row_of(alert: _Alert) -> AlertRow:
    labels = {_cut(k): _cut(v) for k, v in list(alert.labels.items())[:MAX_LABELS]}
    notes = alert.annotations
    instance = labels.get("instance", "")
    return AlertRow(
        labels.get("alertname", ""), _cut(alert.state), labels.get("severity", ""),
        host_of(labels) or instance_host(instance), instance, labels.get("job_name", ""), labels.get("rank", ""),
        labels.get("gpu", ""), owner_of(labels), _cut(notes.get("summary", "") or notes.get("description", "")),
        _since(alert.activeAt), _cut(alert.value), _cut(notes.get("hwtop_fleet", "")),
        _cut(notes.get("hwtop_on_host", "")), tuple(sorted(labels.items())))


def parse_alerts(body: bytes) -> AlertList:
    """The alerts of one answer, firing first; FetchError where it is not a Prometheus alerts answer."""
    try:
        answer = _ANSWER.decode(body)
    except msgspec.DecodeError as error:
        raise FetchError(f"not a Prometheus alerts answer ({str(error)[:120]})") from None
    if answer.status != "success" or answer.data is None:
        raise FetchError(f"Prometheus: {_cut(answer.error or answer.status)[:200]}")
    rows = sorted((row_of(alert) for alert in answer.data.alerts), key=AlertRow.sort_key)
    return AlertList(tuple(rows[:MAX_ALERTS]), None, max(0, len(rows) - MAX_ALERTS))


def read_alerts(bodies: dict[str, bytes], errors: dict[str, str]) -> AlertList | None:
    """This round's alert list from its answers: None where it was not asked, a message where it failed."""
    if ALERTS in errors:
        return AlertList(message=f"Prometheus alerts: {errors[ALERTS]}")
    if ALERTS not in bodies:
        return None
    try:
        return parse_alerts(bodies[ALERTS])
    except FetchError as error:
        return AlertList(message=f"Prometheus alerts: {error}")


def alerts_document(frame: FleetFrame, now: float) -> dict[str, object]:
    """`hwtop fleet --prometheus URL --alerts --json`: the alerts, firing first, and what is wrong with the source."""
    listed = frame.alerts or AlertList(message="no alerts read")
    return {"source": frame.description, "problem": frame.problem, **listed.to_dict(now)}



def answered(frame: FleetFrame) -> bool:
    """Prometheus gave this round's alerts (--alerts --json exits 0), not an error or an old list."""
    return frame.alerts is not None and frame.alerts.message is None and frame.stale_s is None
