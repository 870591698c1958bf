"""The exporter's HTTP side: a thread ticks the Session and keeps its latest Frame; the server answers
GET /metrics from it (404 for every other path). No NVML call happens on a scrape. A scrape that comes before the
first frame waits for it (up to FIRST_FRAME_WAIT_S, then 503 with the reason), never an empty page.

The server is one asyncio event loop in the thread that calls `serve_forever`: every connection is a coroutine,
not a thread, so 2,000 idle or half-open connections cost memory, never 2,000 threads. Each connection must send
a whole request head within `read_timeout` or it is closed; above `max_connections` the oldest idle one is closed
so a flood cannot lock Prometheus out. Rendering a page takes about a millisecond and happens on the loop."""

from __future__ import annotations

import asyncio
import contextlib
import resource
import socket
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator
from typing import Protocol
from urllib.parse import unquote

from hwtop.exporter.metrics import families
from hwtop.exporter.text import CONTENT_TYPE, Family, render
from hwtop.model.frame import Frame

READ_TIMEOUT_S = 10.0  # a connection gets this long to send a request head (and between keep-alive requests)
WRITE_TIMEOUT_S = 10.0  # and this long to take the answer
MAX_HEAD_BYTES = 16 << 10
MAX_CONNECTIONS = 4096  # lowered to what the open-files limit allows
BACKLOG = 4096  # asyncio's default of 100 drops SYNs under a burst: clients then wait a second to retry


FIRST_FRAME_WAIT_S = 8.0  # a scrape before the first reading waits this long (Prometheus gives up at 10 s)


class Latest:
    """The ticking thread's last Frame, swapped in one assignment. Until the first one, a scrape has nothing true
    to say: `when_ready` lets the server hold scrapes until then rather than answer an empty page (Prometheus would
    record the host as up with no GPUs, and an absent() alert would fire on every restart)."""

    def __init__(self) -> None:
        self.frame: Frame | None = None
        self.samples = 0
        self.error: str | None = None  # why the latest tick failed, while no tick has succeeded since
        self._lock = threading.Lock()
        self._waiting: list[Callable[[], object]] = []

    def put(self, frame: Frame) -> None:
        self.frame, self.error = frame, None
        self.samples += 1
        if self.samples == 1:
            with self._lock:
                waiting, self._waiting = self._waiting, []
            for callback in waiting:
                callback()

    def when_ready(self, callback: Callable[[], object]) -> None:
        """Calls `callback` once there is a frame: now if there is one, else from the ticking thread."""
        with self._lock:
            if self.frame is None:
                self._waiting.append(callback)
                return
        callback()


class FamilySource(Protocol):
    def collect(self) -> Iterable[Family]: ...


class SnapshotCollector:
    def __init__(self, latest: Latest, version: str, hostname: str | None = None,
                 job_name: str | None = None) -> None:
        self.latest, self.version, self.hostname, self.job_name = latest, version, hostname, job_name

    def collect(self) -> Iterator[Family]:
        frame = self.latest.frame
        if frame is None:
            return families(None, (), self.version)
        return families(frame.snapshot, frame.findings, self.version, self.hostname, self.job_name, frame.verdicts)


def tick_forever(tick: Callable[[], Frame], latest: Latest, interval: float, stop: threading.Event) -> None:
    while not stop.is_set():
        started = time.monotonic()
        try:
            latest.put(tick())
        except Exception as error:  # noqa: BLE001 - a failed tick keeps the last values; the next one retries
            latest.error = f"{type(error).__name__}: {error}"
        stop.wait(max(0.0, interval - (time.monotonic() - started)))


Wsgi = Callable[[dict[str, str], Callable[[str, list[tuple[str, str]]], object]], Iterable[bytes]]


def metrics_app(source: FamilySource) -> Wsgi:
    """A WSGI callable: GET or HEAD /metrics renders `source`; everything else is 404."""
    def app(environ: dict[str, str], start_response: Callable[[str, list[tuple[str, str]]], object]) -> list[bytes]:
        if environ.get("PATH_INFO") != "/metrics" or environ.get("REQUEST_METHOD") not in ("GET", "HEAD"):
            start_response("404 Not Found", [("Content-Type", "text/plain; charset=utf-8")])
            return [b"hwtop serves only GET /metrics\n"]
        body = render(source.collect())
        start_response("200 OK", [("Content-Type", CONTENT_TYPE), ("Content-Length", str(len(body)))])
        return [body] if environ["REQUEST_METHOD"] == "GET" else [b""]

    return app


def _open_files_limit(wanted: int) -> int:
    """Raises the soft open-files limit toward `wanted` (as Go servers do); returns the limit now in force."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
    if soft != resource.RLIM_INFINITY and soft < target:
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
            soft = target
    return wanted if soft == resource.RLIM_INFINITY else soft


class MetricsServer:
    """Binds in the constructor (raising OSError when it cannot); `serve_forever` runs the loop until
    `shutdown` is called from another thread. The names follow socketserver's, which this replaces."""

    def __init__(self, host: str, port: int, app: Wsgi, *, read_timeout: float = READ_TIMEOUT_S,
                 max_connections: int = MAX_CONNECTIONS, first_frame: Latest | None = None,
                 first_wait_s: float = FIRST_FRAME_WAIT_S) -> None:
        self.app = app
        self.first_frame = first_frame  # scrapes of /metrics wait (bounded) for its first frame, then answer 503
        self.first_wait_s = first_wait_s
        self._ready: asyncio.Event | None = None
        self.read_timeout = read_timeout
        self.max_connections = max(8, min(max_connections, _open_files_limit(max_connections + 64) - 64))
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        self.socket = socket.socket(family, socket.SOCK_STREAM)
        try:
            self.socket.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            self.socket.bind((host, port))
            self.socket.listen(BACKLOG)
        except OSError:
            self.socket.close()
            raise
        self.socket.setblocking(False)
        self.server_address = self.socket.getsockname()
        self.server_port: int = self.server_address[1]
        self.idle: OrderedDict[asyncio.StreamWriter, None] = OrderedDict()  # waiting for a request head
        self.connections: dict[asyncio.StreamWriter, asyncio.Task[None] | None] = {}
        self.evicted = 0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._started = threading.Event()
        self._done = threading.Event()
        self._stop_requested = False  # a stop asked for before the loop runs is kept, not lost
        self._closing = False

    def serve_forever(self, poll_interval: float = 0.5) -> None:  # noqa: ARG002 - socketserver's signature
        try:
            asyncio.run(self._serve())
        finally:
            self._done.set()

    @property
    def open_connections(self) -> int:
        return len(self.connections)

    def stop_soon(self) -> None:
        """Asks `serve_forever` to return; safe from another thread or a signal handler, and before the loop
        has started (then it returns as soon as it starts)."""
        self._stop_requested = True
        if self._loop is not None and self._stop is not None:
            with contextlib.suppress(RuntimeError):  # the loop already ended
                self._loop.call_soon_threadsafe(self._stop.set)

    def shutdown(self) -> None:
        """Stops `serve_forever` and waits for it to return (call it from another thread)."""
        if self._started.wait(5.0):
            self.stop_soon()
            self._done.wait(10.0)

    def server_close(self) -> None:
        self.socket.close()

    async def _serve(self) -> None:
        self._stop = asyncio.Event()
        self._loop = loop = asyncio.get_running_loop()
        self._ready = ready = asyncio.Event()
        if self.first_frame is None:
            ready.set()
        else:
            self.first_frame.when_ready(lambda: _call_soon(loop, ready.set))
        if self._stop_requested:
            self._stop.set()
        server = await asyncio.start_server(self._connection, sock=self.socket, limit=MAX_HEAD_BYTES,
                                            backlog=BACKLOG)
        self._started.set()
        try:
            await self._stop.wait()
        finally:
            # Close every connection and let its coroutine end by itself: nothing is left to cancel. A connection
            # accepted just now has a task that has not run yet: it sees `_closing` and ends at once.
            self._closing = True
            ready.set()  # wakes scrapes still waiting for a first frame: they see `_closing` and end
            server.close()
            for writer in list(self.connections):
                writer.close()
            pending = asyncio.all_tasks() - {asyncio.current_task()}
            if pending:
                await asyncio.wait(pending, timeout=2.0)

    def _admit(self, writer: asyncio.StreamWriter) -> None:
        while len(self.idle) >= self.max_connections:
            oldest, _ = self.idle.popitem(last=False)
            oldest.close()
            self.evicted += 1
        self.idle[writer] = None

    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if self._closing:
            writer.close()
            return
        self.connections[writer] = asyncio.current_task()
        try:
            keep_alive = True
            while keep_alive:
                self._admit(writer)
                try:
                    head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), self.read_timeout)
                except (TimeoutError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError,
                        OSError):
                    return
                finally:
                    self.idle.pop(writer, None)
                ready = await self._first_frame()
                if self._closing:
                    return
                try:
                    response, keep_alive = self._answer(head, ready)
                except Exception as error:  # noqa: BLE001 - a bug in rendering answers 500, the server stays up
                    body = f"hwtop could not render the metrics: {type(error).__name__}\n".encode()
                    response, keep_alive = _response("500 Internal Server Error",
                                                     [("Content-Type", "text/plain; charset=utf-8"),
                                                      ("Content-Length", str(len(body)))], body, False), False
                writer.write(response)
                await asyncio.wait_for(writer.drain(), WRITE_TIMEOUT_S)
        except (TimeoutError, ConnectionError, OSError):
            pass
        finally:
            self.connections.pop(writer, None)
            self.idle.pop(writer, None)
            writer.close()

    async def _first_frame(self) -> bool:
        """Whether there is a frame to answer from, waiting up to `first_wait_s` for the first one."""
        ready = self._ready
        if ready is None or ready.is_set():
            return True
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(ready.wait(), self.first_wait_s)
        return ready.is_set()

    def _not_ready(self, keep_alive: bool) -> bytes:
        """503 with the reason, for a scrape that came before the first reading and waited it out."""
        error = self.first_frame.error if self.first_frame is not None else None
        reason = (f"its ticks fail: {error}" if error else
                  f"its first reading of the machine has not finished after {self.first_wait_s:.0f} s")
        body = f"hwtop has no reading to serve yet: {reason}\n".encode(errors="replace")
        return _response("503 Service Unavailable", [("Content-Type", "text/plain; charset=utf-8"),
                                                     ("Content-Length", str(len(body))), ("Retry-After", "5")],
                         body, keep_alive)

    def _answer(self, head: bytes, ready: bool = True) -> tuple[bytes, bool]:
        lines = head.decode("latin-1").split("\r\n")
        parts = lines[0].split(" ")
        if len(parts) != 3 or not parts[2].startswith("HTTP/1."):
            return _response("400 Bad Request", [("Content-Type", "text/plain")], b"bad request\n", False), False
        method, target, version = parts
        headers = {}
        for line in lines[1:]:
            name, sep, value = line.partition(":")
            if sep:
                headers[name.strip().lower()] = value.strip().lower()
        # A body (which /metrics never takes) would be read as the next request: answer, then close.
        keep_alive = (version == "HTTP/1.1" and headers.get("connection") != "close"
                      and "content-length" not in headers and "transfer-encoding" not in headers)
        path, _, query = target.partition("?")
        if not ready and unquote(path) == "/metrics":
            return self._not_ready(keep_alive), keep_alive
        environ = {"REQUEST_METHOD": method, "PATH_INFO": unquote(path), "QUERY_STRING": query,
                   "SERVER_PROTOCOL": version}
        status: list[str] = []
        response_headers: list[tuple[str, str]] = []

        def start_response(code: str, given: list[tuple[str, str]]) -> object:
            status.append(code)
            response_headers.extend(given)
            return None

        body = b"".join(self.app(environ, start_response))
        if not any(name.lower() == "content-length" for name, _ in response_headers):
            response_headers.append(("Content-Length", str(len(body))))
        return _response(status[0], response_headers, body, keep_alive), keep_alive


def _call_soon(loop: asyncio.AbstractEventLoop, callback: Callable[[], object]) -> None:
    with contextlib.suppress(RuntimeError):  # the loop has ended: nobody waits any more
        loop.call_soon_threadsafe(callback)


def _response(status: str, headers: list[tuple[str, str]], body: bytes, keep_alive: bool) -> bytes:
    lines = [f"HTTP/1.1 {status}", *(f"{name}: {value}" for name, value in headers),
             f"Connection: {'keep-alive' if keep_alive else 'close'}"]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body


class Ticks:
    """The ticking thread's handle. `set()` stops it and waits for the tick in progress to end, so nothing (a
    demo's scratch files, NVML) is still in use when the command returns and the interpreter cleans up."""

    def __init__(self, tick: Callable[[], Frame], latest: Latest, interval: float) -> None:
        self._stop = threading.Event()
        self._thread = threading.Thread(target=tick_forever, args=(tick, latest, interval, self._stop),
                                        name="hwtop-export-ticks", daemon=True)
        self._thread.start()

    def set(self, timeout: float = 10.0) -> None:
        self._stop.set()
        if self._thread is not threading.current_thread():
            self._thread.join(timeout)


def make_exporter(tick: Callable[[], Frame], host: str, port: int, interval: float, version: str,
                  hostname: str | None = None, job_name: str | None = None) -> tuple[MetricsServer, Ticks, Latest]:
    """Binds (raising OSError when it cannot), starts the ticking thread (`tick` is a Session's); serve with
    server.serve_forever(), then stop the ticks with `.set()`."""
    latest = Latest()
    server = MetricsServer(host, port, metrics_app(SnapshotCollector(latest, version, hostname, job_name)),
                           first_frame=latest)
    return server, Ticks(tick, latest, interval), latest
