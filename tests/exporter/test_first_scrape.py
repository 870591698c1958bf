"""The exporter's first scrape: one that comes before the first reading waits for it rather than answering a page
with no series (Prometheus would record the host as up with no GPUs, and an absent() alert fire on every restart);
one whose reading never comes gets 503 with the reason, within a bound."""

from __future__ import annotations

import re
import subprocess
import sys
import threading
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import pytest

from hwtop.exporter.server import MetricsServer, make_exporter
from hwtop.model.frame import Frame
from tests.exporter.test_exporter import free_port
from tests.factories import demo_snapshots

SERVING = re.compile(rb"serving http://127\.0\.0\.1:(\d+)/metrics")


@contextmanager
def exporter(tick: Callable[[], Frame], **server: float) -> Iterator[str]:
    running, stop, _latest = make_exporter(tick, "127.0.0.1", 0, 3600.0, "test")
    for name, value in server.items():
        setattr(running, name, value)
    thread = threading.Thread(target=running.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{running.server_port}/metrics"
    finally:
        stop.set(timeout=0.0)
        running.shutdown()
        running.server_close()


def answer(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=30) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


def test_a_scrape_before_the_first_reading_waits_for_it(monkeypatch):
    frame = Frame(demo_snapshots("dgx-a100", count=2)[-1])
    release, asked, arrived = threading.Event(), threading.Event(), threading.Event()
    first_frame = MetricsServer._first_frame

    async def noted(self: MetricsServer) -> bool:
        arrived.set()  # the server has read the scrape's request
        return await first_frame(self)

    monkeypatch.setattr(MetricsServer, "_first_frame", noted)

    def first_tick() -> Frame:
        asked.set()
        release.wait(30)
        return frame

    with exporter(first_tick) as url:
        assert asked.wait(10)  # the first tick is under way, and held there
        got: list[tuple[int, str]] = []
        scraping = threading.Thread(target=lambda: got.append(answer(url)))
        scraping.start()
        assert arrived.wait(10)
        release.set()  # the reading arrives while the scrape waits for it
        scraping.join(30)
    status, body = got[0]
    assert status == 200
    assert len(re.findall(r"^DCGM_FI_DEV_GPU_UTIL\{", body, re.M)) == 8, body[:400]


@pytest.mark.slow  # over the fast suite's minute on two cores (--durations)
def test_a_reading_that_never_comes_answers_503_with_the_reason():
    never = threading.Event()

    def hung_tick() -> Frame:
        never.wait(30)
        raise RuntimeError("the driver never answered")

    with exporter(hung_tick, first_wait_s=0.3) as url:
        status, body = answer(url)
        other, _ = answer(url.replace("/metrics", "/"))
    never.set()
    assert status == 503
    assert body == "hwtop has no reading to serve yet: its first reading of the machine has not finished after 0 s\n"
    assert other == 404  # only /metrics waits for a reading


@pytest.mark.slow  # over the fast suite's minute on two cores (--durations)
def test_failing_ticks_are_the_503s_reason():
    def failing_tick() -> Frame:
        raise OSError("NVML: driver/library version mismatch")

    with exporter(failing_tick, first_wait_s=0.5) as url:
        status, body = answer(url)
    assert status == 503
    assert "its ticks fail: OSError: NVML: driver/library version mismatch" in body


@pytest.mark.slow
def test_the_command_scraped_at_once_has_every_gpu_twenty_times():
    """As Prometheus meets a restarted exporter: the port answers, and the very first scrape is whole."""
    for start in range(20):
        process = subprocess.Popen([sys.executable, "-m", "hwtop", "export", "--demo", "dgx-a100", "--listen",
                                    f"127.0.0.1:{free_port()}"], stderr=subprocess.PIPE, stdout=subprocess.DEVNULL)
        try:
            assert process.stderr is not None
            line = b""
            while not (found := SERVING.search(line)):
                line = process.stderr.readline()
                assert line, f"start {start}: the exporter ended before serving"
            status, body = answer(f"http://127.0.0.1:{int(found.group(1))}/metrics")
        finally:
            process.terminate()
            process.wait(30)
        assert status == 200, f"start {start}: {status} {body[:200]}"
        assert len(re.findall(r"^DCGM_FI_DEV_GPU_UTIL\{", body, re.M)) == 8, f"start {start}: {body[:400]}"
