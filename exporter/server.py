"""The exporter's HTTP side: a thread ticks the Session and keeps its latest Frame; the server answers
GET /metrics from it (and 404 for every other path). No NVML call happens on a scrape."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

from prometheus_client import CONTENT_TYPE_LATEST
from prometheus_client.exposition import ThreadingWSGIServer, generate_latest
from prometheus_client.registry import Collector, CollectorRegistry

from hwtop.exporter.metrics import families
from hwtop.model.frame import Frame


class Latest:
    """The ticking thread's last Frame, swapped in one assignment."""

    def __init__(self) -> None:
        self.frame: Frame | None = None
        self.samples = 0


class SnapshotCollector(Collector):
    def __init__(self, latest: Latest, version: str) -> None:
        self.latest, self.version = latest, version

    def collect(self):  # noqa: ANN201 - prometheus_client's interface
        frame = self.latest.frame
        if frame is None:
            return families(None, (), self.version)
        return families(frame.snapshot, frame.findings, self.version)


def tick_forever(tick: Callable[[], Frame], latest: Latest, interval: float, stop: threading.Event) -> None:
    while not stop.is_set():
        started = time.monotonic()
        try:
            latest.frame = tick()
            latest.samples += 1
        except Exception:  # noqa: BLE001 - a failed tick keeps the last values; the next one retries
            pass
        stop.wait(max(0.0, interval - (time.monotonic() - started)))


class _QuietHandler(WSGIRequestHandler):
    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - the base class's name
        pass


def metrics_app(registry: CollectorRegistry):  # noqa: ANN201 - a WSGI callable
    def app(environ, start_response):  # noqa: ANN001, ANN202
        if environ.get("PATH_INFO") != "/metrics" or environ.get("REQUEST_METHOD") not in ("GET", "HEAD"):
            start_response("404 Not Found", [("Content-Type", "text/plain; charset=utf-8")])
            return [b"hwtop serves only GET /metrics\n"]
        body = generate_latest(registry)
        start_response("200 OK", [("Content-Type", CONTENT_TYPE_LATEST), ("Content-Length", str(len(body)))])
        return [body] if environ["REQUEST_METHOD"] == "GET" else [b""]

    return app


def make_exporter(tick: Callable[[], Frame], host: str, port: int, interval: float,
                  version: str) -> tuple[WSGIServer, threading.Event, Latest]:
    """Binds (raising OSError when it cannot), starts the ticking thread (`tick` is a Session's); serve with
    server.serve_forever()."""
    latest = Latest()
    registry = CollectorRegistry(auto_describe=False)
    registry.register(SnapshotCollector(latest, version))
    server_class = ThreadingWSGIServer
    if ":" in host:  # an IPv6 address such as ::1
        import socket

        class _Server6(ThreadingWSGIServer):
            address_family = socket.AF_INET6

        server_class = _Server6
    server = make_server(host, port, metrics_app(registry), server_class, handler_class=_QuietHandler)
    stop = threading.Event()
    thread = threading.Thread(target=tick_forever, args=(tick, latest, interval, stop),
                              name="hwtop-export-ticks", daemon=True)
    thread.start()
    return server, stop, latest
