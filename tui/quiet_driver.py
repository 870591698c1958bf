"""Textual's Linux driver with an input thread that sleeps until there is input.

Textual's own input thread wakes ten times a second, input or not, to time out a lone Escape. For an idle
monitor that is its largest single cost: 0.17% of a core in a bare Textual app, a fifth of what btop costs in
all (`benchmarks/peers.py`). Here the thread waits for the terminal, or for the exit flag through a pipe, with
no timeout at all, and only while the key parser holds part of a sequence (an Escape that may start one) as
long as the parser asks; and at the end of input (stdin from /dev/null), it stops reading rather than spin on
a descriptor that stays readable. Everything else (terminal modes, the writer thread, resize, suspend) is
Textual's."""

from __future__ import annotations

import os
import selectors
import threading
from codecs import getincrementaldecoder
from typing import Any

from textual._parser import ParseError
from textual._time import get_time
from textual._xterm_parser import XTermParser
from textual.drivers.linux_driver import LinuxDriver

POLL_S = 0.1  # Textual's own wait: used when a Textual release keeps the parser's deadline elsewhere
_UNKNOWN = object()


class _WakingEvent(threading.Event):
    """The input thread's exit flag: setting it also writes to a pipe the thread waits on, so it ends at once."""

    def __init__(self, wake_fd: int) -> None:
        super().__init__()
        self._wake_fd = wake_fd

    def set(self) -> None:
        super().set()
        try:
            os.write(self._wake_fd, b"x")
        except OSError:  # full (a wake is already pending) or closed (the driver is gone): nothing to wake
            pass


def wait_s(parser: object) -> float | None:
    """How long the input thread may sleep: until the parser's deadline for the sequence it holds, forever when
    it holds none."""
    deadline = getattr(parser, "_timeout_time", _UNKNOWN)
    if deadline is _UNKNOWN or not (deadline is None or isinstance(deadline, float)):
        return POLL_S
    if deadline is None:
        return None
    return max(0.0, deadline - get_time())


class QuietLinuxDriver(LinuxDriver):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._wake_read, self._wake_write = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
        self.exit_event = _WakingEvent(self._wake_write)

    def run_input_thread(self) -> None:
        """Textual's loop (read, parse, dispatch; a final read at exit) with the wait above."""
        selector = selectors.SelectSelector()  # as Textual's: select() also takes a stdin that is a file
        selector.register(self.fileno, selectors.EVENT_READ)
        selector.register(self._wake_read, selectors.EVENT_READ)
        self._drain_wakes()  # a wake left from an earlier run of this thread (suspend and resume)
        parser = XTermParser(self._debug)
        decode = getincrementaldecoder("utf-8")().decode

        reading = True

        def process(events: list[tuple[selectors.SelectorKey, int]], final: bool = False) -> None:
            nonlocal reading
            for key, _mask in events:
                if key.fd != self.fileno:
                    continue
                data = decode(os.read(self.fileno, 1024 * 4), final=final)
                if not data:  # end of input (stdin from /dev/null or a file): it stays readable, so stop asking
                    selector.unregister(self.fileno)  # Textual's thread spins at 100% of a core here
                    reading = False
                    break
                for event in parser.feed(data):
                    self.process_message(event)
            for event in parser.tick():
                self.process_message(event)

        try:
            while not self.exit_event.is_set():
                process(selector.select(wait_s(parser)))
            if reading:
                selector.unregister(self.fileno)
            process(selector.select(POLL_S), final=True)
        finally:
            selector.close()
            try:
                for _event in parser.feed(""):
                    pass
            except (EOFError, ParseError):
                pass

    def _drain_wakes(self) -> None:
        try:
            while os.read(self._wake_read, 64):
                pass
        except OSError:  # empty
            pass

    def close(self) -> None:
        super().close()
        for fd in (self._wake_read, self._wake_write):
            try:
                os.close(fd)
            except OSError:
                pass
