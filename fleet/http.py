"""HTTP GETs with a deadline, run on a fixed set of daemon threads.

Why daemon threads and not a ThreadPoolExecutor: the executor's threads are joined when the interpreter exits,
so one endpoint that answers after 30 s would hold `q` for 30 s. Here the UI never waits on a request: it
submits, gets a Future, and reads it when it is done; quitting leaves unfinished requests to die with the
process. Each request also ends by itself: every socket read gets only the time left before its deadline, and
the body is capped."""

from __future__ import annotations

import http.client
import queue
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from typing import TypeVar
from urllib.parse import urlsplit

from hwtop import __version__

T = TypeVar("T")
USER_AGENT = f"hwtop-fleet/{__version__}"


class FetchError(Exception):
    """A request that did not give a usable answer, said in one line for the status column."""


class DaemonPool:
    """`workers` daemon threads taking jobs from one queue; never joined."""

    def __init__(self, workers: int, name: str = "hwtop-fleet") -> None:
        self._jobs: queue.SimpleQueue[tuple[Callable[[], object], Future[object]] | None] = queue.SimpleQueue()
        self._threads = [threading.Thread(target=self._work, name=f"{name}-{i}", daemon=True)
                         for i in range(max(1, workers))]
        for thread in self._threads:
            thread.start()

    @property
    def size(self) -> int:
        return len(self._threads)

    def submit(self, job: Callable[[], T]) -> Future[T]:
        future: Future[T] = Future()
        self._jobs.put((job, future))  # type: ignore[arg-type]
        return future

    def _work(self) -> None:
        while (item := self._jobs.get()) is not None:
            job, future = item
            if not future.set_running_or_notify_cancel():
                continue
            try:
                future.set_result(job())
            except BaseException as error:  # noqa: BLE001 - handed to whoever reads the Future
                future.set_exception(error)

    def close(self) -> None:
        """Lets idle workers end; busy ones finish their request (bounded by its deadline) and end."""
        for _ in self._threads:
            self._jobs.put(None)


def get(url: str, timeout: float, max_bytes: int, accept: str = "*/*") -> bytes:
    """The body of a 200 answer, read within `timeout` seconds in all; FetchError otherwise (an HTTP error's
    body is in the message when it is short, as Prometheus' JSON errors are)."""
    deadline = time.monotonic() + timeout
    parts = urlsplit(url)
    connection_class = http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
    connection = connection_class(parts.hostname or "", parts.port, timeout=timeout)

    def left() -> float:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise TimeoutError
        return remaining

    target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    try:
        connection.connect()
        sock = connection.sock
        connection.request("GET", target, headers={"User-Agent": USER_AGENT, "Accept": accept,
                                                   "Accept-Encoding": "identity"})
        if sock is not None:
            sock.settimeout(left())
        response = connection.getresponse()
        chunks: list[bytes] = []
        size = 0
        while True:
            if sock is not None:
                sock.settimeout(left())
            chunk = response.read1(65536)
            if not chunk:
                break
            size += len(chunk)
            if size > max_bytes:
                raise FetchError(f"answer larger than {max_bytes >> 20} MiB")
            chunks.append(chunk)
        if response.length:  # the connection ended before the Content-Length it promised
            raise FetchError(f"answer cut short: {size:,} of {size + response.length:,} bytes")
        body = b"".join(chunks)
        if response.status != 200:
            detail = body[:300].decode("utf-8", "replace").strip() if len(body) <= 300 else ""
            raise FetchError(f"HTTP {response.status}" + (f": {detail}" if detail else ""))
        return body
    except TimeoutError:
        raise FetchError(f"no answer within {timeout:g} s") from None
    except http.client.HTTPException as error:
        raise FetchError(f"not HTTP: {type(error).__name__}") from None
    except OSError as error:
        reason = error.strerror or str(error) or type(error).__name__
        raise FetchError(f"unreachable: {reason}") from None
    finally:
        connection.close()
