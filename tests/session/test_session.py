"""Closing a session while its tick runs on another thread (the app quitting mid-tick): close waits for the tick,
closes the source once, and nothing samples, or opens NVML, after it."""

from __future__ import annotations

import threading

import pytest

from hwtop.demo.nvml import demo_library
from hwtop.model.snapshot import Snapshot
from hwtop.probes.gpu import NvmlProbe
from hwtop.probes.nvml.slow import BackgroundCalls
from hwtop.session.session import Session, SessionClosed
from tests.factories import ScriptedSource, host_snapshot


class SlowSource(ScriptedSource):
    """A source whose sample holds until the test lets it go, writing down what happened in which order."""

    def __init__(self) -> None:
        super().__init__([host_snapshot()])
        self.events: list[str] = []
        self.sampling = threading.Event()
        self.release = threading.Event()

    def sample(self) -> Snapshot:
        self.events.append("sample starts")
        self.sampling.set()
        assert self.release.wait(5)
        self.events.append("sample ends")
        return super().sample()

    def close(self) -> None:
        self.events.append("close")
        super().close()


def test_close_waits_for_the_tick_in_flight_then_closes_once() -> None:
    source = SlowSource()
    session = Session(source)
    ticking = threading.Thread(target=session.tick)
    ticking.start()
    assert source.sampling.wait(5)
    closing = threading.Thread(target=session.close)
    closing.start()
    closing.join(0.2)
    assert closing.is_alive() and source.events == ["sample starts"]  # close is waiting for the tick
    source.release.set()
    ticking.join(5)
    closing.join(5)
    session.close()
    assert source.events == ["sample starts", "sample ends", "close"]
    with pytest.raises(SessionClosed):
        session.tick()
    assert source.samples == 1


def test_a_closed_gpu_probe_does_not_open_nvml_again() -> None:
    fake = demo_library("h200-vm")
    probe = NvmlProbe(fake.pynvml, source="demo:h200-vm", background=BackgroundCalls(inline=True))
    system, gpus = probe.read()
    assert system.available and len(gpus) == 1
    probe.close()
    system, gpus = probe.read()
    assert not system.available and gpus == () and "closed" in (system.message or "")
    inits = {symbol: count for symbol, count in fake.calls.items() if symbol.startswith("nvmlInit")}
    shutdowns = fake.calls["nvmlShutdown"]
    assert sum(inits.values()) == 1 and shutdowns == 1


def test_a_read_hung_in_the_driver_does_not_hang_the_close(monkeypatch) -> None:
    """NVML is not shut down under a call: close waits CLOSE_WAIT_S for the read, then leaves NVML to the
    process's exit instead of waiting for ever."""
    import hwtop.probes.gpu as gpu_module

    monkeypatch.setattr(gpu_module, "CLOSE_WAIT_S", 0.2)
    fake = demo_library("h200-vm")
    probe = NvmlProbe(fake.pynvml, source="demo:h200-vm", background=BackgroundCalls(inline=True))
    probe.read()
    inside, release = threading.Event(), threading.Event()
    real = fake.pynvml.nvmlDeviceGetPowerUsage

    def hung(handle):
        inside.set()
        assert release.wait(5)
        return real(handle)

    monkeypatch.setattr(fake.pynvml, "nvmlDeviceGetPowerUsage", hung)
    reading = threading.Thread(target=probe.read)
    reading.start()
    assert inside.wait(5)
    closing = threading.Thread(target=probe.close)
    closing.start()
    closing.join(2)
    assert not closing.is_alive() and fake.calls["nvmlShutdown"] == 0
    release.set()
    reading.join(5)


def test_a_tick_does_not_ask_the_source_what_it_can_tell(monkeypatch: pytest.MonkeyPatch) -> None:
    """Whether the source replays recorded advice or a timeline is asked once, when the session is made: an
    isinstance of a runtime Protocol walks its members, and a tick asked it twice. A replay's still told."""
    import typing

    from hwtop.session.session import RecordedAdvice, RecordedTimeline

    session = Session(ScriptedSource([host_snapshot(time=t) for t in (1.0, 2.0, 3.0)]))
    asked: list[object] = []
    check = type(RecordedAdvice).__instancecheck__

    def counted(cls: type, instance: object) -> bool:
        if cls in (RecordedAdvice, RecordedTimeline):
            asked.append(cls)
        return check(cls, instance)

    monkeypatch.setattr(typing._ProtocolMeta, "__instancecheck__", counted)  # noqa: SLF001
    for _ in range(3):
        session.tick()
    assert asked == []

    class Replayed(ScriptedSource):
        def recorded_findings(self) -> tuple[()]:
            return ()

        def recorded_timeline(self) -> tuple[()]:
            return ()

    assert Session(Replayed([host_snapshot(time=1.0)])).tick().recorded
