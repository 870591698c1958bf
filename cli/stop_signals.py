"""A stop asked by a signal, noted by its handler rather than raised from it.

A handler that raises KeyboardInterrupt raises it wherever the main thread happens to be. When that is a
finalizer (a generator closed as it is dropped, a weakref callback), Python prints the traceback, swallows the
exception and carries on: CI saw a recorder print KeyboardInterrupt on SIGTERM and keep recording. Here the
handler only notes the signal, and `wait` (the loop's sleep) wakes on it through Python's wakeup fd."""

from __future__ import annotations

import select
import signal
import socket
import time
from collections.abc import Callable
from types import FrameType, TracebackType
from typing import Any

STOPPING = (signal.SIGTERM, signal.SIGHUP, signal.SIGINT)


class StopSignals:
    """Within `with`, SIGTERM, SIGHUP and ctrl-c end the caller's loop at its next `wait` (or its next check of
    `asked`), after `on_stop` (which must not block) has run; the previous handlers and wakeup fd come back on
    exit. A second signal is the user insisting: the previous handlers come back and take it at once (ctrl-c
    raises KeyboardInterrupt, SIGTERM ends the process). Use from the main thread only."""

    __slots__ = ("_reader", "_writer", "_previous", "_previous_fd", "_on_stop", "signum")

    def __init__(self, on_stop: Callable[[], object] | None = None) -> None:
        self.signum: int | None = None
        self._on_stop = on_stop
        self._reader: socket.socket | None = None
        self._writer: socket.socket | None = None
        self._previous: dict[int, Any] = {}
        self._previous_fd = -1

    @property
    def asked(self) -> bool:
        return self.signum is not None

    def _note(self, signum: int, _frame: FrameType | None) -> None:
        if self.signum is not None:
            self._restore_handlers()
            signal.raise_signal(signum)
            return
        self.signum = signum
        if self._on_stop is not None:
            self._on_stop()

    def _restore_handlers(self) -> None:
        for sig, handler in self._previous.items():
            signal.signal(sig, signal.SIG_DFL if handler is None else handler)  # None: set outside Python

    def __enter__(self) -> StopSignals:
        self._reader, self._writer = socket.socketpair()
        for end in (self._reader, self._writer):
            end.setblocking(False)
        self._previous = {sig: signal.getsignal(sig) for sig in STOPPING}
        self._previous_fd = signal.set_wakeup_fd(self._writer.fileno(), warn_on_full_buffer=False)
        for sig in STOPPING:
            signal.signal(sig, self._note)
        return self

    def wait(self, seconds: float) -> bool:
        """Sleeps up to `seconds`, less when a stop is asked meanwhile; True when one has been asked. Outside
        `with` it is a plain sleep."""
        reader = self._reader
        if self.signum is not None or seconds <= 0:
            pass
        elif reader is None:
            time.sleep(seconds)
        else:
            select.select([reader], [], [], seconds)
            try:
                while reader.recv(64):
                    pass
            except BlockingIOError:
                pass
        return self.signum is not None

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        self._restore_handlers()
        signal.set_wakeup_fd(self._previous_fd)
        for end in (self._reader, self._writer):
            if end is not None:
                end.close()
        self._reader = self._writer = None
