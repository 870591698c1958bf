"""Faults and bad input through the real HTTP path (hwtop.fleet.http's GET against a stand-in server on a free
loopback port): Prometheus answering 500, restarted mid-session, an answer cut short, an exporter that is down or
slow, and label values that are hostile (markup, escapes, a 1 MB label). Each is one line of literal text, the last
good hosts stay on screen marked stale with their age, and nothing raises."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from hwtop.fleet.session import FleetSession
from hwtop.fleet.sources import Ask, DirectSource, PrometheusSource
from hwtop.tui.fleet.host_table import NARROW_WIDTHS, WIDTHS, row_cells
from tests.fleet.test_prometheus import Clock, Replay, _replay_any


class StandIn:
    """A Prometheus stand-in: answers from a recording (Prometheus 2.42's own answers), or misbehaves as told."""

    def __init__(self) -> None:
        self.replay = Replay("hwtop-two-hosts")
        self.mode = "ok"  # ok | 500 | cut | slow
        self.body: bytes | None = None  # answers this instead of the recording, when set
        self.release = threading.Event()
        stand_in = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 - http.server's name
                stand_in.answer(self)

            def log_message(self, *args: object) -> None:
                pass

        self.handler = Handler
        self.server = self._serve(0)
        self.port = self.server.server_address[1]

    def _serve(self, port: int) -> ThreadingHTTPServer:
        server = ThreadingHTTPServer(("127.0.0.1", port), self.handler)
        server.daemon_threads = True
        threading.Thread(target=server.serve_forever, daemon=True).start()
        return server

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def answer(self, request: BaseHTTPRequestHandler) -> None:
        if self.mode == "slow":
            self.release.wait(30)
        body = self.body if self.body is not None else _replay_any(self.replay, f"http://x{request.path}")
        if self.mode == "500":
            body = b'{"status":"error","errorType":"internal","error":"query processing would load too many samples"}'
            request.send_response(500)
        else:
            request.send_response(200)
        request.send_header("Content-Type", "application/json")
        request.send_header("Content-Length", str(len(body)))
        request.end_headers()
        request.wfile.write(body[: len(body) // 2] if self.mode == "cut" else body)

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def restart(self) -> None:
        """On the same port, as a restarted Prometheus comes back."""
        self.server = self._serve(self.port)


@contextmanager
def stand_in() -> Iterator[StandIn]:
    server = StandIn()
    try:
        yield server
    finally:
        server.release.set()
        server.stop()


def session_of(server: StandIn, clock: Clock) -> FleetSession:
    source = PrometheusSource(server.url, "", interval=1.0, timeout=2.0, wall=lambda: server.replay.recording["now"])
    return FleetSession(source, clock=clock)


def one_line(text: str | None) -> str:
    assert text is not None and "\n" not in text and len(text) < 400, text
    return text


@pytest.mark.parametrize(("mode", "said"), [
    ("500", "HTTP 500: "),
    ("cut", "answer cut short: "),
])
@pytest.mark.slow  # over the fast suite's minute on two cores (--durations)
def test_a_bad_answer_keeps_the_last_hosts_marked_stale_with_their_age(mode: str, said: str) -> None:
    clock = Clock()
    with stand_in() as server:
        session = session_of(server, clock)
        try:
            good = session.round()
            assert good.problem is None and len(good.hosts) == 3 and good.stale_s is None
            server.mode = mode
            clock.now += 12
            frame = session.round()
            assert one_line(frame.problem).startswith(said) and frame.problem.endswith(
                "; showing what it said 12 s ago"), frame.problem
            assert frame.hosts == good.hosts and frame.stale_s == 12 and frame.summary == good.summary
            server.mode = "ok"
            assert session.round().problem is None and session.frame.stale_s is None
        finally:
            session.close()


@pytest.mark.slow  # over the fast suite's minute on two cores (--durations)
def test_a_prometheus_restarted_mid_session_is_a_line_then_the_fleet_again() -> None:
    clock = Clock()
    with stand_in() as server:
        session = session_of(server, clock)
        try:
            assert len(session.round().hosts) == 3
            server.stop()
            clock.now += 3
            down = session.round()
            assert one_line(down.problem) == "unreachable: Connection refused; showing what it said 3 s ago"
            assert len(down.hosts) == 3 and down.stale_s == 3
            server.restart()
            back = session.round()
            assert back.problem is None and len(back.hosts) == 3 and back.stale_s is None
        finally:
            session.close()


@pytest.mark.slow  # over the fast suite's minute on two cores (--durations)
def test_a_json_answer_cut_short_is_one_line() -> None:
    with stand_in() as server:
        recorded = json.dumps(server.replay.recording["answers"]["gpu:DCGM_FI_DEV_GPU_UTIL"]["body"]).encode()
        server.body = recorded[: len(recorded) // 2]  # a whole HTTP answer of half the JSON (a proxy's truncation)
        session = session_of(server, Clock())
        try:
            frame = session.round()
        finally:
            session.close()
    assert one_line(frame.problem) == "not a Prometheus API answer (not JSON)" and frame.hosts == ()


@pytest.mark.slow  # over the fast suite's minute on two cores (--durations)
def test_a_slow_prometheus_is_a_line_at_the_deadline() -> None:
    with stand_in() as server:
        server.mode = "slow"
        source = PrometheusSource(server.url, "", interval=1.0, timeout=0.3)
        try:
            got = source.read(Ask())
        finally:
            server.release.set()
            source.close()
    assert got.hosts is None and one_line(got.problem) == "no answer within 0.3 s"


HOSTILE = ("[bold red]x[/]", "[@click=app.quit]q", "\x1b]0;pwn\x07\x1b[2J", "a\nb\tc\r", "\u202eevil", "x" * (1 << 20))


def _series(name: str, labels: dict[str, str], value: str) -> dict[str, object]:
    return {"metric": {"__name__": name, **labels}, "value": [1.8e9, value]}


@pytest.mark.slow  # over the fast suite's minute on two cores (--durations)
def test_hostile_label_values_are_literal_cut_and_never_a_crash() -> None:
    table = []
    for i, text in enumerate(HOSTILE):
        gpu = {"gpu": "0", "UUID": f"GPU-{i}", "modelName": text, "Hostname": text, "instance": f"h{i}:9400",
               "job": text}
        table += [_series("DCGM_FI_DEV_GPU_UTIL", gpu, "50"),
                  _series("hwtop_finding", {"rule": text, "severity": text, "scope": text, "Hostname": text,
                                            "instance": f"h{i}:9500"}, "1")]
    body = json.dumps({"status": "success", "data": {"resultType": "vector", "result": table}}).encode()
    with stand_in() as server:
        server.body = body
        session = session_of(server, Clock())
        try:
            frame = session.round()
        finally:
            session.close()
    assert len(frame.hosts) == len(HOSTILE)
    for view in frame.hosts:
        for narrow, widths in ((False, WIDTHS), (True, NARROW_WIDTHS)):
            cells = row_cells(view, narrow, widths)
            assert all(len(cell.plain) <= 120 for cell in cells)  # the 1 MB label cut to its column
            assert not any("@click" in str(span.style) or "bold red" in str(span.style)
                           for cell in cells for span in cell.spans)
            assert not any(c in cell.plain for cell in cells for c in "\x1b\x07\n\r")  # control characters shown


@pytest.mark.slow  # over the fast suite's minute on two cores (--durations)
def test_an_exporter_down_or_slow_is_its_row_in_one_line() -> None:
    with stand_in() as slow:
        slow.mode = "slow"
        closed = StandIn()
        closed.stop()
        source = DirectSource([f"{slow.url}/metrics", f"{closed.url}/metrics"], timeout=0.3)
        try:
            rows = {view.address: view for view in source.read(Ask()).hosts or ()}
        finally:
            slow.release.set()
            source.close()
    assert one_line(rows[f"{slow.url}/metrics"].error) == "no answer within 0.3 s"
    assert one_line(rows[f"{closed.url}/metrics"].error) == "unreachable: Connection refused"
