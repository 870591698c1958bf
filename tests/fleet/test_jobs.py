"""`hwtop fleet --prometheus URL` without --job: the jobs Prometheus holds (every job_name of the hwtop job series
now), each with its hosts, its ranks and its verdict judged as `--job NAME` judges it, hangs and stragglers first;
`--json` lists them; a Prometheus without these series says so in one line. Prometheus' answers are made in its
JSON shape (tests/fleet/test_job.py's FakePrometheus), served over HTTP for the command's test."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import urllib.parse
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hwtop.advice.thresholds import Thresholds
from hwtop.fleet.jobs import MAX_JOBS, assemble_jobs
from hwtop.fleet.session import FleetSession
from hwtop.fleet.sources import Ask, PrometheusSource, Round
from tests.fleet.test_job import URL, FakePrometheus, finding, job_info, rank_series

HWTOP = [sys.executable, "-m", "hwtop"]


def three_jobs() -> FakePrometheus:
    """`train`: rank 1 on node-1 straggles; `eval`: balanced; `bert`: rank 3 on node-2 hangs; `idle`: watched by
    an exporter that has read no rank yet."""
    table = [finding("node-1", "gpu-throttled", "warning", "GPU3")]
    ranks = [rank_series("node-0", 0, 18.0, 12.0), rank_series("node-1", 1, 0.5, 29.5),
             rank_series("node-0", 0, 15.0, 15.0, job="eval"), rank_series("node-0", 1, 14.0, 16.0, job="eval"),
             rank_series("node-2", 2, 29.5, 0.5, job="bert"), rank_series("node-2", 3, 0.0, 30.0, job="bert")]
    return FakePrometheus(table, ranks, infos=[job_info("train", "node-0"), job_info("train", "node-1"),
                                               job_info("idle", "node-3")])


def listed(prometheus: FakePrometheus) -> Round:
    source = PrometheusSource(URL, "", interval=1.0, timeout=2.0, getter=prometheus, job_window_s=30)
    try:
        return source.read(Ask(jobs=True))
    finally:
        source.close()


def test_every_job_with_its_hosts_ranks_and_verdict_hangs_and_stragglers_first():
    jobs = listed(three_jobs()).jobs
    assert jobs is not None and jobs.message is None and jobs.left_out == 0
    assert [(row.name, row.hosts, len(row.view.ranks)) for row in jobs.jobs] == [
        ("bert", ("node-2",), 2), ("train", ("node-0", "node-1"), 2), ("eval", ("node-0",), 2),
        ("idle", ("node-3",), 0)]
    bert, train, balanced, idle = jobs.jobs
    assert bert.view.verdict is not None and (bert.view.verdict.kind, bert.view.verdict.named) == \
        ("hang", "rank 3 on node-2 (pid 103)")
    assert train.view.verdict is not None and (train.view.verdict.kind, train.view.verdict.named) == \
        ("straggler", "rank 1 on node-1 (pid 101)")
    assert train.view.cause is not None and train.view.cause.rule == "gpu-throttled"
    assert balanced.view.verdict is None and idle.view.message == "its exporters read no rank figures yet"
    assert train.to_dict(1010.0) == {"job": "train", "hosts": ["node-0", "node-1"], "ranks": 2,
                                     "verdict": train.view.to_dict(1010.0)["verdict"], "message": None}


def test_the_list_is_asked_in_the_rounds_that_want_it_and_only_those():
    prometheus = three_jobs()
    session = FleetSession(PrometheusSource(URL, "", interval=1.0, timeout=2.0, getter=prometheus, job_window_s=30))

    def asked(jobs: bool) -> list[str]:
        prometheus.asked.clear()
        session.ask(None, jobs)
        session.round()
        return [q for q in prometheus.asked if "hwtop_job" in q]

    try:
        first = asked(True)
        assert len(first) == 3 and all('job_name!=""' in q for q in first), first
        assert any("hwtop_job_info" in q for q in first) and session.frame.jobs is not None
        assert asked(False) == [] and session.frame.jobs is None
    finally:
        session.close()


def test_a_prometheus_without_job_series_says_so_in_one_line():
    jobs = listed(FakePrometheus([finding("node-0", "io-bound", "warning")], [])).jobs
    assert jobs is not None and jobs.jobs == () and jobs.message == "no hwtop job series at http://prom:9090"


def test_a_failed_list_query_is_the_lists_message():
    prometheus = three_jobs()

    def getter(url: str, timeout: float, limit: int) -> bytes:
        if "increase(" in urllib.parse.unquote_plus(url):
            return b"<html>"
        return prometheus(url, timeout, limit)

    jobs = listed(getter).jobs  # type: ignore[arg-type]
    assert jobs is not None and jobs.jobs == ()
    assert jobs.message == "Prometheus: jobs_increase: not a Prometheus API answer (not JSON)"


def test_more_jobs_than_listed_are_counted():
    now = [({"__name__": "hwtop_job_info", "job_name": f"j{i:04}", "Hostname": "n"}, 1.0)
           for i in range(MAX_JOBS + 7)]
    jobs = assemble_jobs(URL, now, [], [], [], Thresholds())
    assert len(jobs.jobs) == MAX_JOBS and jobs.left_out == 7


@given(st.lists(st.tuples(st.dictionaries(st.sampled_from(["__name__", "rank", "Hostname", "phase", "job_name"]),
                                          st.text(max_size=8)),
                          st.floats(allow_nan=True, allow_infinity=True)), max_size=30))
@pytest.mark.slow  # over the fast suite's minute on two cores (--durations)
def test_any_answer_gives_a_list_never_an_error(items):
    jobs = assemble_jobs(URL, items, items, items, [], Thresholds())
    assert all(row.name for row in jobs.jobs) and (jobs.jobs or jobs.message)


@contextmanager
def served(prometheus: FakePrometheus) -> Iterator[str]:
    """The fake's answers over HTTP on a free loopback port, as a Prometheus serves its API."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - http.server's name
            body = prometheus(f"http://prom{self.path}", 2.0, 1 << 20)
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.slow  # over the fast suite's minute on two cores (--durations)
def test_the_command_without_a_job_lists_the_jobs_as_json():
    with served(three_jobs()) as url:
        done = subprocess.run([*HWTOP, "fleet", "--prometheus", url, "--json", "--rank-window", "30"],
                              capture_output=True, text=True, timeout=60)
        empty = FakePrometheus([finding("node-0", "io-bound", "warning")], [])
        with served(empty) as bare:
            nothing = subprocess.run([*HWTOP, "fleet", "--prometheus", bare, "--json"], capture_output=True,
                                     text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout)
    assert "job" not in answer and answer["jobs_message"] is None and answer["jobs_left_out"] == 0
    assert [(j["job"], j["hosts"], j["ranks"]) for j in answer["jobs"]] == [
        ("bert", ["node-2"], 2), ("train", ["node-0", "node-1"], 2), ("eval", ["node-0"], 2), ("idle", ["node-3"], 0)]
    train = answer["jobs"][1]["verdict"]
    assert (train["kind"], train["rank"], train["host"]) == ("straggler", 1, "node-1")
    assert train["likely_cause"] == {"rule": "gpu-throttled", "severity": "warning", "scope": "GPU3"}
    assert nothing.returncode == 0, nothing.stderr
    bare_answer = json.loads(nothing.stdout)
    assert bare_answer["jobs"] == [] and bare_answer["jobs_message"] == f"no hwtop job series at {bare}"


def test_a_hosts_round_does_not_wait_for_the_job_list_once_one_is_shown():
    """The list's queries (the slowest of a round) run on their own: the first list is waited for (the screen
    that just opened shows it), later rounds publish their hosts with the last list while the next is asked,
    and join it once it has answered."""
    prometheus, hold, release, answered = three_jobs(), threading.Event(), threading.Event(), threading.Event()
    held: list[str] = []

    def getter(url: str, timeout: float, limit: int) -> bytes:
        if hold.is_set() and "hwtop_job_rank" in urllib.parse.unquote(url):
            release.wait(10)
            held.append(url)
            if len(held) == 3:  # the list's three queries
                answered.set()
        return prometheus(url, timeout, limit)

    source = PrometheusSource(URL, "", interval=0.0, timeout=20.0, getter=getter, job_window_s=30)
    try:
        first = source.read(Ask(jobs=True))
        assert first.jobs is not None and len(first.jobs.jobs) == 4
        hold.set()
        second = source.read(Ask(jobs=True))  # the next list asked, held by Prometheus: not waited for
        assert second.hosts is not None and second.jobs is first.jobs
        release.set()
        assert answered.wait(10)
        for _ in range(100):  # joined by a later round once its futures are done (just after the answers)
            third = source.read(Ask(jobs=True))
            if third.jobs is not first.jobs:
                break
        assert third.jobs is not None and third.jobs is not first.jobs and len(third.jobs.jobs) == 4
    finally:
        release.set()
        source.close()
