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
from typing import TYPE_CHECKING, Any

from hwtop.tui.textual_compat import ParseError, SigcontHookDriver, XTermParser, get_time, parser_deadline

if TYPE_CHECKING:
    from textual.app import App

POLL_S = 0.1  # Textual's own wait: used when a Textual release keeps the parser's deadline elsewhere


class _WakingEvent(threading.Event):
    """The input thread's exit flag: setting it also writes to the pipe the running thread waits on, so it ends
    at once. Each run of the thread (Textual starts a new one after a suspend) opens its own pipe and closes it
    when it ends: under the lock, so a byte is never written to a closed descriptor's reused number."""

    def __init__(self) -> None:
        super().__init__()
        self._lock = threading.Lock()
        self._pipe: tuple[int, int] | None = None

    def open_pipe(self) -> int:
        """A new pipe for a new run of the thread; its read end."""
        read_end, write_end = os.pipe()  # not inherited by children (PEP 446)
        os.set_blocking(write_end, False)  # a full pipe already holds a wake
        with self._lock:
            self._pipe = (read_end, write_end)
        return read_end

    def close_pipe(self) -> None:
        with self._lock:
            pipe, self._pipe = self._pipe, None
        for fd in pipe or ():
            os.close(fd)

    def set(self) -> None:
        super().set()
        with self._lock:
            if self._pipe is not None:
                try:
                    os.write(self._pipe[1], b"x")
                except BlockingIOError:  # full: a wake is already pending
                    pass


def wait_s(parser: object) -> float | None:
    """How long the input thread may sleep: until the parser's deadline for the sequence it holds, forever when
    it holds none."""
    deadline = parser_deadline(parser)
    if deadline is None:
        return None
    if not isinstance(deadline, float):  # UNKNOWN
        return POLL_S
    return max(0.0, deadline - get_time())


class QuietLinuxDriver(SigcontHookDriver):
    exit_event: _WakingEvent

    def __init__(self, app: App[Any], *, debug: bool = False, mouse: bool = True,
                 size: tuple[int, int] | None = None) -> None:
        super().__init__(app, debug=debug, mouse=mouse, size=size)
        self.exit_event = _WakingEvent()

    def sigcont_received(self, *args: object) -> None:
        """SIGCONT resumes only what a SIGTSTP (ctrl+z) suspended. The kernel also sends SIGCONT, with SIGHUP, when
        the terminal hangs up (an SSH drop, tmux kill-server): Textual's handler then started a second input thread
        that nothing stopped, and the process outlived its terminal until the exit watchdog, ~12 s."""
        if self.suspended_by_sigtstp:
            super().sigcont_received(*args)

    def run_input_thread(self) -> None:
        """Textual's loop (read, parse, dispatch; a final read at exit) with the wait above."""
        wake = self.exit_event.open_pipe()
        selector = selectors.SelectSelector()  # as Textual's: select() also takes a stdin that is a file
        selector.register(self.fileno, selectors.EVENT_READ)
        selector.register(wake, selectors.EVENT_READ)
        parser = XTermParser(self.parser_debug)
        decode = getincrementaldecoder("utf-8")().decode
        reading = True

        def process(events: list[tuple[selectors.SelectorKey, int]], final: bool = False) -> None:
            nonlocal reading
            for key, _mask in events:
                if key.fd != self.fileno:
                    continue
                raw = os.read(self.fileno, 1024 * 4)
                if not raw:  # end of input (stdin from /dev/null or a file): it stays readable, so stop asking
                    selector.unregister(self.fileno)  # Textual's thread spins at 100% of a core here
                    reading = False
                    break
                text = decode(raw, final=final)
                if not text:  # only part of a character so far (feeding "" would tell the parser input ended)
                    continue
                for event in parser.feed(text):
                    self.process_message(event)
            for event in parser.tick():
                self.process_message(event)

        try:
            while not self.exit_event.is_set():
                process(selector.select(wait_s(parser)))
            if reading:
                selector.unregister(self.fileno)
            process(selector.select(0), final=True)
        finally:
            selector.close()
            self.exit_event.close_pipe()
            try:
                for _event in parser.feed(""):
                    pass
            except (EOFError, ParseError):
                pass
