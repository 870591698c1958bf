"""The watch's manners and its join, with the query replaced by the stand-in's answers and the intervals
shortened (monkeypatched): asked only once libnccl is mapped, one query at a time, never sooner than the
interval, held after an answer showing a communicator initialising, errors kept as one line each."""

from __future__ import annotations

import mmap
import os
import threading
import time
from pathlib import Path

import pytest

from hwtop.model.job import JobProcess, JobSnapshot
from hwtop.probes.nccl_ras import watch as watch_module
from hwtop.probes.nccl_ras.client import Address, RasError, RawReply
from hwtop.probes.nccl_ras.watch import RasWatch, maps_libnccl
from tests.nccl_ras_standin import StandComm, StandRank, json_reply


def process(pid: int, env: tuple[tuple[str, str], ...] = ()) -> JobProcess:
    return JobProcess(pid, 1, "python", "python train.py", "rank 0", 0, 0, "S", 1.0, 1, 1, None, nccl_env=env)


def job(*processes: JobProcess) -> JobSnapshot:
    return JobSnapshot("job", (1,), "running", processes, None, 0)


class Asked:
    """Answers like NCCL, recording when each query began and ended."""

    def __init__(self, answers: list[list[StandComm] | Exception]) -> None:
        self.answers, self.calls, self.active, self.most = answers, [], 0, 0
        self.done = threading.Condition()

    def __call__(self, address: Address, want_json: bool) -> RawReply:
        with self.done:
            self.active += 1
            self.most = max(self.most, self.active)
            self.calls.append((time.monotonic(), address, want_json))
            answer = self.answers[min(len(self.calls) - 1, len(self.answers) - 1)]
        try:
            if isinstance(answer, Exception):
                raise answer
            return RawReply("json", json_reply(answer), 2)
        finally:
            with self.done:
                self.active -= 1
                self.done.notify_all()

    def wait(self, count: int) -> None:
        with self.done:
            assert self.done.wait_for(lambda: len(self.calls) >= count and self.active == 0, 20.0)


def comms(init: int = 0) -> list[StandComm]:
    return [StandComm(1, [StandRank(i, "10.0.0.1", 100 + i, i, {"AllReduce": 5}, init_state=init if i == 1 else 0)
                          for i in range(4)])]


@pytest.fixture
def fast(monkeypatch):
    monkeypatch.setattr(watch_module, "MIN_INTERVAL_S", 0.05)
    monkeypatch.setattr(watch_module, "INIT_HOLD_S", 0.6)


def test_not_asked_without_libnccl(tmp_path: Path, fast) -> None:
    asked = Asked([comms()])
    w = RasWatch(interval_s=0.05, proc=str(tmp_path), ask=asked)
    (tmp_path / "7").mkdir()
    (tmp_path / "7" / "maps").write_text("7f00-7f01 r-xp 0 08:01 1 /usr/lib/libc.so.6\n")
    out = w.attach(job(process(7)), 0.0)
    assert out.nccl is None and w._thread is None
    w.close()


def test_address_from_environment_manners_and_init_hold(tmp_path: Path, fast) -> None:
    (tmp_path / "7").mkdir()
    (tmp_path / "7" / "maps").write_text("7f00-7f01 r-xp 0 08:01 1 /opt/nccl/lib/libnccl.so.2.30.3\n")
    asked = Asked([comms(init=7), comms(), comms(), RasError("the server closed the connection mid-answer"),
                   comms()])
    w = RasWatch(interval_s=0.05, proc=str(tmp_path), ask=asked)
    the_job = job(process(7, (("NCCL_RAS_ADDR", "127.0.0.1:31234"),)))
    first = w.attach(the_job, 0.0)
    assert first.nccl is not None and first.nccl.address == "127.0.0.1:31234"
    assert first.nccl.source == "NCCL_RAS_ADDR of pid 7"
    asked.wait(5)
    w.close()
    times = [t for t, _, _ in asked.calls]
    gaps = [b - a for a, b in zip(times, times[1:], strict=False)]
    assert asked.most == 1  # one query at a time
    assert gaps[0] >= 0.6 and min(gaps) >= 0.05  # held after init_state 7; never sooner than the interval
    view = w.attach(the_job, 0.0).nccl
    assert view is not None and view.queries >= 3
    assert any("mid-answer" in line for line in view.errors) and all("\n" not in line for line in view.errors)


def test_default_port_and_given_address(tmp_path: Path, fast) -> None:
    (tmp_path / "7").mkdir()
    (tmp_path / "7" / "maps").write_text("x /usr/lib/x86_64-linux-gnu/libnccl.so.2\n")
    w = RasWatch(interval_s=0.05, proc=str(tmp_path), ask=Asked([comms()]))
    assert w.attach(job(process(7)), 0.0).nccl.address == "localhost:28028"  # type: ignore[union-attr]
    w.close()
    given = RasWatch(Address("127.0.0.1", 9), interval_s=0.05, proc=str(tmp_path / "none"), ask=Asked([comms()]))
    view = given.attach(job(process(8)), 0.0).nccl
    assert view is not None and (view.address, view.source) == ("127.0.0.1:9", "--nccl-ras")
    given.close()


def test_maps_of_a_process_that_mmaps_libnccl(tmp_path: Path) -> None:
    lib = tmp_path / "libnccl.so.2"
    lib.write_bytes(b"\0" * 4096)
    with open(lib, "rb") as f, mmap.mmap(f.fileno(), 4096, prot=mmap.PROT_READ):
        assert maps_libnccl(os.getpid())
    assert not maps_libnccl(999_999_999)


def test_interval_never_below_five_seconds() -> None:
    assert watch_module.interval_seconds(0.1) == 5.0 and watch_module.interval_seconds(30) == 30


def test_ras_turned_off_by_the_job_is_not_asked(tmp_path: Path, fast) -> None:
    (tmp_path / "7").mkdir()
    (tmp_path / "7" / "maps").write_text("x /usr/lib/libnccl.so.2\n")
    asked = Asked([comms()])
    w = RasWatch(interval_s=0.05, proc=str(tmp_path), ask=asked)
    out = w.attach(job(process(7, (("NCCL_RAS_ENABLE", "0"),))), 0.0)
    assert out.nccl is None and w._thread is None and not asked.calls
    w.close()
