"""Shared pytest configuration; the `slow` mark (torch runs, tmux, Prometheus) is declared in pyproject.toml.

Hypothesis' per-example deadline is off: on a loaded 2-core CI box a 200 ms deadline fails tests for the box's
load, not for the code (the properties themselves are unchanged).

A room imported by its bare name (`import model.snapshot`) fails the test that does it (tests/import_names.py).
`utc`: a test that reads clock times as the screen writes them runs in UTC.
Each test leaves the garbage collector as it found it: Textual pauses it during a smooth scroll and an app that
exits mid-scroll never resumes it, and GuardedApp, finding it paused at a later app's first frame, once took that app
for the monitor's run() and left the young threshold at its own (seen as tests/tui/test_guarded_app.py failing after
tests/tui/test_fleet_jobs_screen.py in the same worker).

Bytecode is written (`__pycache__/`, ignored by git) even where PYTHONDONTWRITEBYTECODE is set: without it every
process of the suite, each xdist worker included, rewrote the asserts of every test module and compiled the checkout
again (~3 s of CPU a worker, a tenth of the fast suite's work at four workers); pytest checks each cached file against
its source's size and time."""

import gc
import sys
import time

import pytest
from hypothesis import settings

from tests import import_names

sys.dont_write_bytecode = False
settings.register_profile("hwtop", deadline=None)
settings.load_profile("hwtop")
import_names.install()


@pytest.fixture
def utc(monkeypatch):
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


@pytest.fixture(autouse=True)
def _collector_kept():
    enabled, thresholds = gc.isenabled(), gc.get_threshold()
    yield
    gc.set_threshold(*thresholds)
    if enabled:
        gc.enable()
