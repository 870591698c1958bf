"""The input thread of hwtop's terminal driver (tui.quiet_driver), on a real pty: it sleeps while there is no
input (Textual's own wakes ten times a second), still delivers keys and a lone Escape, and ends at once when
the app exits. The whole app with it, under tmux: tests/tui/test_terminal_tmux.py."""

from __future__ import annotations

import asyncio
import os
import pty
import selectors
import signal
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from types import SimpleNamespace

import pytest
from textual import events

from hwtop.tui import quiet_driver, textual_compat
from hwtop.tui.quiet_driver import POLL_S, QuietLinuxDriver, wait_s
from tests.waiting import wait_until


class CountingSelector(selectors.SelectSelector):
    calls = 0

    def select(self, timeout: float | None = None):  # type: ignore[override]
        CountingSelector.calls += 1
        return super().select(timeout)


@contextmanager
def input_thread(monkeypatch: pytest.MonkeyPatch,
                 input_fd: int) -> Iterator[tuple[QuietLinuxDriver, list[events.Event]]]:
    """A driver reading `input_fd`, its input thread running, and the events it dispatched."""
    monkeypatch.setattr(quiet_driver.selectors, "SelectSelector", CountingSelector)
    CountingSelector.calls = 0
    handlers = {sig: signal.getsignal(sig) for sig in (signal.SIGTSTP, signal.SIGCONT)}
    seen: list[events.Event] = []

    async def make() -> QuietLinuxDriver:
        return QuietLinuxDriver(SimpleNamespace())  # type: ignore[arg-type]  # the input thread never uses the app

    driver = asyncio.run(make())
    driver.fileno = input_fd
    monkeypatch.setattr(driver, "process_message", seen.append)
    thread = threading.Thread(target=driver.run_input_thread, daemon=True)
    thread.start()
    try:
        yield driver, seen
    finally:
        driver.exit_event.set()
        thread.join(2)
        driver.close()
        for sig, handler in handlers.items():
            signal.signal(sig, handler)


@pytest.fixture
def terminal(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[QuietLinuxDriver, int, list[events.Event]]]:
    """The driver's input is a pty; the test writes to its other side."""
    driver_side, test_side = pty.openpty()
    try:
        with input_thread(monkeypatch, driver_side) as (driver, seen):
            yield driver, test_side, seen
    finally:
        os.close(driver_side)
        os.close(test_side)


def keys(seen: list[events.Event]) -> list[str]:
    return [e.key for e in seen if isinstance(e, events.Key)]


def wait_for(predicate, timeout: float = 10.0) -> bool:  # a bound, not a pace: it returns at the event
    return wait_until(predicate, timeout, poll=0.01)


@pytest.mark.slow  # over the fast suite's minute on two cores (--durations)
def test_with_no_input_the_thread_sleeps(terminal) -> None:
    assert wait_for(lambda: CountingSelector.calls >= 1)  # the thread is waiting (a busy box starts it late)
    time.sleep(0.8)
    assert CountingSelector.calls == 1  # one wait, still blocked (Textual's thread: 8 by now)


@pytest.mark.slow  # over the fast suite's minute on two cores (--durations)
def test_keys_and_a_lone_escape_arrive(terminal) -> None:
    _, test_side, seen = terminal
    os.write(test_side, b"q")
    assert wait_for(lambda: keys(seen) == ["q"]), keys(seen)
    os.write(test_side, b"\x1b")  # may begin a sequence: the parser waits a moment, then it is the Escape key
    assert wait_for(lambda: keys(seen) == ["q", "escape"]), keys(seen)
    before = CountingSelector.calls
    time.sleep(0.5)
    assert CountingSelector.calls == before  # asleep again once the parser holds nothing


def test_exit_ends_the_thread_at_once(terminal) -> None:
    driver, _, _ = terminal
    thread = next(t for t in threading.enumerate() if t.name != "MainThread" and t.is_alive()
                  and getattr(t, "_target", None) == driver.run_input_thread)
    started = time.monotonic()
    driver.exit_event.set()
    thread.join(2)
    assert not thread.is_alive() and time.monotonic() - started < 0.5


def test_the_wait_follows_the_parsers_deadline() -> None:
    assert wait_s(SimpleNamespace(_timeout_time=None)) is None
    later = quiet_driver.get_time() + 0.05
    assert 0.0 < (wait_s(SimpleNamespace(_timeout_time=later)) or 0.0) <= 0.05
    assert wait_s(SimpleNamespace(_timeout_time=quiet_driver.get_time() - 1.0)) == 0.0  # overdue: tick now
    assert wait_s(SimpleNamespace()) == POLL_S  # a parser that keeps its deadline elsewhere: poll as Textual does


@pytest.mark.slow  # over the fast suite's minute on two cores (--durations)
def test_at_the_end_of_input_the_thread_sleeps_instead_of_spinning(monkeypatch: pytest.MonkeyPatch) -> None:
    """stdin from /dev/null or a file: readable forever, every read empty. Textual's own thread spins at 100% of a
    core on it."""
    read_end, write_end = os.pipe()
    os.close(write_end)  # input that has ended
    try:
        with input_thread(monkeypatch, read_end) as (driver, _):
            time.sleep(0.3)
            calls = CountingSelector.calls
            time.sleep(0.5)
            assert CountingSelector.calls == calls <= 3, CountingSelector.calls
            thread = next(t for t in threading.enumerate() if getattr(t, "_target", None) == driver.run_input_thread)
            driver.exit_event.set()
            thread.join(2)
            assert not thread.is_alive()  # and it still ends on exit
    finally:
        os.close(read_end)


def test_a_character_split_across_reads_is_not_the_end_of_input(terminal) -> None:
    """Over a slow link the bytes of one UTF-8 character can arrive apart; the first part decodes to nothing."""
    _, test_side, seen = terminal
    os.write(test_side, b"\xe2")
    time.sleep(0.2)
    os.write(test_side, b"\x82\xac")
    time.sleep(0.1)
    os.write(test_side, b"q")
    assert wait_for(lambda: keys(seen) == ["euro_sign", "q"]), keys(seen)  # Textual names the key "€" so


@pytest.mark.slow  # over the fast suite's minute on two cores (--durations)
def test_after_a_suspend_the_new_input_thread_reads_and_ends_as_the_first(monkeypatch: pytest.MonkeyPatch) -> None:
    """Textual's suspend: stop input (set, join, clear), close the driver; on resume, a new input thread."""
    driver_side, test_side = pty.openpty()
    try:
        with input_thread(monkeypatch, driver_side) as (driver, seen):
            os.write(test_side, b"a")
            assert wait_for(lambda: keys(seen) == ["a"])
            first = next(t for t in threading.enumerate() if getattr(t, "_target", None) == driver.run_input_thread)
            driver.exit_event.set()
            first.join(2)
            driver.exit_event.clear()
            driver.close()
            resumed = threading.Thread(target=driver.run_input_thread, daemon=True)
            resumed.start()
            os.write(test_side, b"b")
            assert wait_for(lambda: keys(seen) == ["a", "b"]), keys(seen)
            time.sleep(0.3)
            calls = CountingSelector.calls
            time.sleep(0.5)
            assert CountingSelector.calls == calls  # asleep, not spinning on a stale descriptor
            started = time.monotonic()
            driver.exit_event.set()
            resumed.join(2)
            assert not first.is_alive() and not resumed.is_alive() and time.monotonic() - started < 0.5
    finally:
        os.close(driver_side)
        os.close(test_side)


@pytest.mark.parametrize("suspended", [False, True])
def test_sigcont_resumes_only_after_a_suspend(monkeypatch: pytest.MonkeyPatch, suspended: bool) -> None:
    """A hangup (SSH drop, tmux kill-server) comes with SIGCONT: resuming then started a second input thread
    that kept the process alive after its terminal was gone. Only a SIGTSTP's suspend is resumed."""
    driver_side, _test_side = pty.openpty()
    try:
        with input_thread(monkeypatch, driver_side) as (driver, _seen):
            resumed: list[bool] = []
            monkeypatch.setattr(driver, "resume_application_mode", lambda: resumed.append(True))
            setattr(driver, textual_compat.AUTO_RESTART_FLAG, True)
            setattr(driver, textual_compat.SUSPENDED_FLAG, suspended)  # what the SIGTSTP handler sets when it suspends
            signal.getsignal(signal.SIGCONT)(signal.SIGCONT, None)  # the handler the driver installed
            assert resumed == ([True] if suspended else [])
    finally:
        os.close(driver_side)
        os.close(_test_side)
