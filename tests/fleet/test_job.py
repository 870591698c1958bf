"""`hwtop fleet --prometheus URL --job NAME`: a job's ranks rebuilt from the hwtop_job_rank_* series of every
host, judged by the one function the one-node rule uses, the named rank's host's own top finding offered as the
likely cause; a Prometheus without these series says so in one line. Prometheus' answers are made here in its
JSON shape; tests/fleet/test_job_across_nodes.py runs the real server against two real exporters."""

from __future__ import annotations

import json
import re
import urllib.parse

import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st

from hwtop.advice.thresholds import Thresholds
from hwtop.fleet.job import assemble_job, job_queries, promql_string
from hwtop.fleet.model import FindingRow, GpuRow, HostView
from hwtop.fleet.sources import Ask, PrometheusSource, Round

URL = "http://prom:9090"


def series(name: str, value: float, **labels: str) -> dict:
    return {"metric": {"__name__": name, **labels}, "value": [1000.0, repr(float(value))]}


def vector(*items: dict) -> bytes:
    return json.dumps({"status": "success", "data": {"resultType": "vector", "result": list(items)}}).encode()


def matrix() -> bytes:
    return json.dumps({"status": "success", "data": {"resultType": "matrix", "result": []}}).encode()


def rank_series(host: str, rank: int, collective: float, other: float, seen: float = 1000.0,
                job: str = "train") -> dict[str, list]:
    """The three job answers' series for one rank: seconds in the window by phase, cumulative, last seen."""
    labels = {"job_name": job, "rank": str(rank), "Hostname": host}
    window = [series("", collective, **labels, phase="collective"), series("", other, **labels, phase="compute")]
    now = [series("hwtop_job_rank_seconds_total", 10 * collective, **labels, phase="collective"),
           series("hwtop_job_rank_seconds_total", 10 * other, **labels, phase="compute"),
           series("hwtop_job_rank_last_seen_timestamp_seconds", seen, **labels),
           series("hwtop_job_rank_info", 1, **labels, pid=str(100 + rank), local_rank="0", gpu="",
                  site=f"train.py:{40 + rank} step")]
    return {"window": window, "now": now}


def job_info(job: str, host: str) -> dict:
    return series("hwtop_job_info", 1, job_name=job, Hostname=host, status="running", instance=f"{host}:1")


class FakePrometheus:
    """A getter answering the fleet's queries: the host table from `table`, the jobs' from `ranks` (those of the
    query's `job_name="..."` when it names one) and `infos` (hwtop_job_info series)."""

    def __init__(self, table: list[dict], ranks: list[dict[str, list]], names: tuple[str, ...] = (),
                 infos: list[dict] | None = None) -> None:
        self.table, self.ranks, self.names, self.asked = table, ranks, names, []
        self.infos = infos or []

    def _of_job(self, promql: str, part: str) -> list[dict]:
        named = re.search(r'job_name=("(?:[^"\\]|\\.)*")', promql)
        items = [s for r in self.ranks for s in r[part]] + (self.infos if "hwtop_job_info" in promql else [])
        return [s for s in items if named is None or s["metric"].get("job_name") == json.loads(named.group(1))]

    def __call__(self, url: str, timeout: float, limit: int) -> bytes:
        parts = urllib.parse.urlsplit(url)
        promql = dict(urllib.parse.parse_qsl(parts.query)).get("query", "")
        self.asked.append(promql)
        if parts.path.endswith("query_range"):
            return matrix()
        if promql.startswith("increase(hwtop_job_rank_seconds_total"):
            return vector(*self._of_job(promql, "window"))
        if promql.startswith("rate(hwtop_job_rank_steps_total"):
            return vector()
        if promql.startswith("group by (job_name)"):
            return vector(*({"metric": {"job_name": name}, "value": [1000.0, "1"]} for name in self.names))
        if "hwtop_job_rank_last_seen" in promql:
            return vector(*self._of_job(promql, "now"))
        if "hwtop_finding" in promql:
            return vector(*self.table)
        return vector()


def one_round(prometheus: FakePrometheus, job: str = "train") -> Round:
    source = PrometheusSource(URL, "", interval=1.0, timeout=2.0, getter=prometheus, job=job, job_window_s=30)
    try:
        return source.read(Ask(job))
    finally:
        source.close()


def finding(host: str, rule: str, severity: str, scope: str = "") -> dict:
    return series("hwtop_finding", 1, rule=rule, severity=severity, scope=scope, Hostname=host, instance=f"{host}:1")


def test_the_straggler_and_its_host_with_that_hosts_own_top_finding_as_the_cause():
    table = [finding("node-1", "rank-straggler", "critical", "rank 3"), finding("node-1", "gpu-throttled", "warning",
             "GPU3"), finding("node-1", "amp-available", "info"), finding("node-0", "io-bound", "warning")]
    ranks = [rank_series("node-0", 0, 18.0, 12.0), rank_series("node-0", 1, 17.0, 13.0),
             rank_series("node-1", 2, 19.0, 11.0), rank_series("node-1", 3, 1.0, 29.0)]
    source = one_round(FakePrometheus(table, ranks))
    view = source.job
    assert view is not None and view.verdict is not None and view.message is None
    assert view.verdict.kind == "straggler" and view.verdict.named == "rank 3 on node-1 (pid 103)"
    assert "at train.py:43 step" in view.verdict.evidence[0]
    assert view.cause == FindingRow("warning", "gpu-throttled", "GPU3")  # not the symptom, not the info
    assert [(r.host, r.rank) for r in view.ranks][0] == ("node-1", 3)
    rank3 = view.ranks[0]
    assert round(rank3.collective_share, 3) == round(1 / 30, 3) and rank3.samples == 300  # 30 s at 10 Hz
    assert dict(rank3.phase_seconds) == {"collective": 10.0, "compute": 290.0}
    out = view.to_dict(now=1010.0)
    assert out["verdict"]["likely_cause"] == {"rule": "gpu-throttled", "severity": "warning", "scope": "GPU3"}
    assert out["ranks"][0]["seen_s_ago"] == 10.0
    # one voice: every rank's state and words as doctor and the job view give them (advice/ranks.py judge)
    assert [(r["rank"], r["state"], r["blamed"]) for r in out["ranks"]] == \
        [(3, "slow", True), (0, "running", False), (1, "running", False), (2, "running", False)]
    assert out["ranks"][0]["words"] == "is slow: the others wait for it (97% compute at train.py:43 step, 3% in " \
        "collectives)"
    assert view.verdict.evidence[0] == f"rank 3 (pid 103 on node-1) {out['ranks'][0]['words']}"


def test_the_rank_that_never_reached_the_collective_is_named_as_the_hang():
    ranks = [rank_series("node-0", 0, 29.5, 0.5), rank_series("node-1", 1, 0.0, 30.0)]
    view = one_round(FakePrometheus([], ranks)).job
    assert view is not None and view.verdict is not None
    assert (view.verdict.kind, view.verdict.named) == ("hang", "rank 1 on node-1 (pid 101)")
    assert view.cause is None
    assert [(v.rank, v.state, v.blamed, v.held_by) for v in view.verdicts.ranks] == \
        [(0, "inside-collective", False, (1,)), (1, "before-collective", True, ())]


def test_a_prometheus_without_job_series_says_so_in_one_line():
    view = one_round(FakePrometheus([finding("node-0", "io-bound", "warning")], [])).job
    assert view is not None and view.ranks == () and view.verdict is None
    assert view.message == 'no hwtop job series at http://prom:9090 for job_name="train"'
    view = one_round(FakePrometheus([], [], names=("gpt", "bert"))).job
    assert view is not None and view.message == \
        'no hwtop job series at http://prom:9090 for job_name="train" (jobs there: bert, gpt)'


def test_without_a_job_the_rounds_ask_no_job_queries():
    prometheus = FakePrometheus([], [])
    source = PrometheusSource(URL, "", interval=1.0, timeout=2.0, getter=prometheus)
    got = source.read(Ask())
    source.close()
    assert got.job is None and not [q for q in prometheus.asked if "hwtop_job" in q]


def test_a_hostile_job_name_is_one_promql_string_and_the_selector_is_kept():
    evil = 'x"} or vector(1) or {a="\\'
    queries = job_queries(evil, 'env="prod"', 30)
    assert all(promql_string(evil) in dict(q.params)["query"] for q in queries if q.key != "job_names")
    assert json.loads(promql_string(evil)) == evil
    assert all('env="prod"' in dict(q.params)["query"] for q in queries)
    assert "[30s]" in dict(queries[1].params)["query"]


def test_hostile_or_out_of_range_labels_are_skipped_not_trusted():
    labels = {"job_name": "train", "Hostname": "n"}
    now = [series("hwtop_job_rank_seconds_total", 1.0, **labels, rank="-1", phase="compute"),
           series("hwtop_job_rank_seconds_total", 1.0, **labels, rank="9" * 40, phase="compute"),
           series("hwtop_job_rank_seconds_total", float("nan"), **labels, rank="2", phase="compute"),
           series("hwtop_job_rank_last_seen_timestamp_seconds", 5.0, **labels, rank="2")]
    parsed = [(s["metric"], float(s["value"][1])) for s in now]
    view = assemble_job("train", URL, parsed, [], [], [], Thresholds())
    assert [r.rank for r in view.ranks] == [2] and view.ranks[0].phase_seconds == ()


def test_host_rows_name_their_gpu_models():
    view = HostView("a", gpus=tuple(GpuRow(str(i), "NVIDIA A100-SXM4-80GB") for i in range(8)))
    assert view.gpu_models == "8x A100-SXM4-80GB"
    view = msgspec.structs.replace(view, gpus=(*view.gpus, GpuRow("8", "NVIDIA L4")))
    assert view.gpu_models == "8x A100-SXM4-80GB, 1x L4"
    assert HostView("b").gpu_models == ""


def test_when_every_rank_seen_waits_a_host_that_stopped_answering_is_named():
    ranks = [rank_series("node-0", 0, 30.0, 0.0)]
    now = [(s["metric"], float(s["value"][1])) for r in ranks for s in r["now"]]
    window = [(s["metric"], float(s["value"][1])) for r in ranks for s in r["window"]]
    down = HostView("127.0.0.1:9401", hostname="node-1", error="down: connection refused")
    view = assemble_job("train", URL, now, window, [], [HostView("a", hostname="node-0"), down], Thresholds())
    assert view.verdict is not None and view.verdict.kind == "hang" and view.verdict.rank is None
    assert view.message == "not answering, their ranks unseen: node-1 (down: connection refused)"


@given(st.lists(st.tuples(st.dictionaries(st.sampled_from(["__name__", "rank", "Hostname", "phase", "pid", "site",
                                                            "job_name"]), st.text(max_size=12)),
                          st.floats(allow_nan=True, allow_infinity=True)), max_size=30))
@pytest.mark.slow  # over the fast suite's minute on two cores (--durations)
def test_any_answer_gives_a_view_never_an_error(items):
    view = assemble_job("train", URL, items, items, items, [], Thresholds())
    assert all(r.rank >= 0 for r in view.ranks) and (view.ranks or view.message)


def test_a_window_shorter_than_two_scrapes_says_so():
    ranks = [rank_series("node-0", 0, 30.0, 0.0), rank_series("node-1", 1, 0.0, 30.0)]
    now = [(s["metric"], float(s["value"][1])) for r in ranks for s in r["now"]]
    view = assemble_job("train", URL, now, [], [], [], Thresholds())
    assert view.verdict is None and "--rank-window" in (view.message or "")


def test_nccl_ranks_of_other_nodes_join_the_job_view():
    """NCCL RAS series (issue 42): a node's exporter reports every rank NCCL knows; the ranks whose own host
    exports stack figures keep their rows, the others are rows of their own with NCCL's state and lag."""
    ranks = [rank_series("node-0", 0, 30.0, 0.5), rank_series("node-0", 1, 29.0, 1.0)]
    now = [(s["metric"], float(s["value"][1])) for r in ranks for s in r["now"]]
    window = [(s["metric"], float(s["value"][1])) for r in ranks for s in r["window"]]
    for rank, host, state, lag in ((0, "node-0", "RUNNING", 0), (5, "10.0.0.3", "RUNNING", 1),
                                   (6, "10.0.0.4", "DEAD", None)):
        labels = {"job_name": "train", "rank": str(rank), "Hostname": host}
        now.append(({"__name__": "hwtop_nccl_rank_state", **labels, "state": state, "pid": str(4050 + rank),
                     "gpu": "1"}, 1.0))
        if lag is not None:
            now.append(({"__name__": "hwtop_nccl_rank_lag", **labels}, float(lag)))
            now.append(({"__name__": "hwtop_nccl_rank_collectives_total", **labels, "op": "AllReduce"},
                        6650.0 - lag))
    view = assemble_job("train", URL, now, window, [], [], Thresholds())
    rows = {(r.host, r.rank): r for r in view.ranks}
    assert set(rows) == {("node-0", 0), ("node-0", 1), ("10.0.0.3", 5), ("10.0.0.4", 6)}
    assert rows[("node-0", 0)].nccl_state == "RUNNING" and not rows[("node-0", 0)].nccl_only
    assert rows[("10.0.0.3", 5)].lag == 1 and rows[("10.0.0.3", 5)].nccl_only
    assert rows[("10.0.0.3", 5)].collectives == (("AllReduce", 6649),) and rows[("10.0.0.4", 6)].nccl_state == "DEAD"
    assert {r["rank"]: r["nccl_state"] for r in view.to_dict(1000.0)["ranks"]}[6] == "DEAD"
    shares = {r["rank"]: r["collective_share"] for r in view.to_dict(1000.0)["ranks"]}
    assert shares[5] is None and shares[0] is not None and shares[0] > 0.9  # NCCL alone: unknown, not 0
