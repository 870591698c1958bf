"""`hwtop snapshot --json` and `hwtop record` on the driver variants (`--demo PROFILE:VARIANT`): the
figures that reach the user, from the fake library through the real bindings, the probe and the sampler."""

from __future__ import annotations

import json
import signal

import pytest

from hwtop.cli.main import main
from hwtop.recording.store import load

FULL_NVLINK = 45e6 * 1024  # the fake's NVLink bytes/s per GPU at full load, over all its links (12 here)
# (rel 1e-4: counters are whole KiB and timestamps whole µs, over 0.1 s ticks)
PCIE_RX_KB = int(0.6e9 / 1000)  # nvmlDeviceGetPcieThroughput at full load: KB/s (of 1000 bytes)


def snapshot(capsys, spec: str) -> dict:
    assert main(["snapshot", "--json", "--demo", spec, "--interval", "0.1"]) == 0
    return json.loads(capsys.readouterr().out)


def record(tmp_path, monkeypatch, spec: str, seconds: float, interval: float = 0.2) -> list:
    monkeypatch.setattr(signal, "signal", lambda *_args: None)  # in-process: leave pytest's handlers alone
    path = str(tmp_path / "run.jsonl")
    assert main(["record", path, "--demo", spec, "--interval", str(interval), "--seconds", str(seconds)]) == 0
    recording = load(path)
    return [recording.snapshot(i) for i in range(len(recording))]


def test_snapshot_on_an_r470_driver_shows_every_gpu_and_its_process(capsys) -> None:
    data = snapshot(capsys, "dgx-a100:r470")
    assert data["gpu_system"]["driver_version"] == "470.256.02" and data["gpu_system"]["available"]
    gpus = data["gpus"]
    assert len(gpus) == 8 and not any(g["lost"] for g in gpus)
    assert [[(p["pid"], p["kind"]) for p in g["processes"]] for g in gpus] == [[(41000 + i, "compute")]
                                                                              for i in range(8)]
    assert all(g["util_percent"] is not None and g["memory_reserved_bytes"] is None for g in gpus)


def test_snapshot_with_a_fan_answering_unknown(capsys) -> None:
    gpus = snapshot(capsys, "ws-2x3090:fan-unknown")["gpus"]
    assert not gpus[1]["lost"] and gpus[1]["fan_percent"] is None and gpus[1]["util_percent"] is not None
    assert gpus[0]["fan_percent"] is not None


def test_snapshot_of_nvlink_traffic_on_every_link_and_pcie_off_the_tick(capsys) -> None:
    gpus = snapshot(capsys, "dgx-a100:nvlink-busy")["gpus"]
    for gpu in gpus:
        assert gpu["nvlink_tx_bytes_per_s"] == pytest.approx(FULL_NVLINK, rel=1e-4)
        assert gpu["nvlink_rx_bytes_per_s"] == pytest.approx(FULL_NVLINK, rel=1e-4)
        assert gpu["pcie"]["rx_bytes_per_s"] == PCIE_RX_KB * 1000  # R550: the 20 ms call, on its own thread
        assert gpu["util_percent"] == 100.0


@pytest.mark.slow  # over the fast suite's minute on two cores (--durations)
def test_snapshot_on_r555_has_pcie_from_the_byte_counters(capsys) -> None:
    gpus = snapshot(capsys, "dgx-a100:r555")["gpus"]
    assert all(g["pcie"]["rx_bytes_per_s"] is not None and g["pcie"]["tx_bytes_per_s"] is not None for g in gpus)


@pytest.mark.slow  # a long subprocess or network wait; CI runs it as a second step
def test_record_on_the_scenarios_keeps_the_figures(tmp_path, monkeypatch) -> None:
    snapshots = record(tmp_path, monkeypatch, "dgx-a100:nvlink-busy", 3.0, interval=0.1)
    assert len(snapshots) >= 2  # rates need two samples (the first tick alone can take most of a second here)
    last = snapshots[-1]
    assert [g.nvlink_tx_bytes_per_s == pytest.approx(FULL_NVLINK, rel=1e-4) for g in last.gpus] == [True] * 8
    assert all(g.processes[0].pid == 41000 + g.index for g in last.gpus)
    r470 = record(tmp_path / "..", monkeypatch, "dgx-a100:r470", 0.15, interval=0.1)[-1]
    assert r470.gpu_system.driver_version == "470.256.02"
    assert [p.pid for g in r470.gpus for p in g.processes] == list(range(41000, 41008))


@pytest.mark.slow
def test_record_through_mig_off_on_off(tmp_path, monkeypatch) -> None:
    """dgx-a100:mig-toggle: GPU 0 switches MIG every second; utilization is N/A exactly while MIG is on."""
    snapshots = record(tmp_path, monkeypatch, "dgx-a100:mig-toggle", 3.4, interval=0.25)
    states = [(s.gpus[0].mig_enabled, s.gpus[0].util_percent is not None, len(s.gpus[0].mig)) for s in snapshots]
    assert set(states) <= {(False, True, 0), (True, False, 2)}
    phases = [mig for i, (mig, _, _) in enumerate(states) if i == 0 or mig != states[i - 1][0]]
    assert "FTF" in "".join("T" if mig else "F" for mig in phases)  # off, on, off again (whatever came first)
    assert all(s.gpus[1].util_percent is not None for s in snapshots)


def test_demo_list_names_the_scenarios_and_a_wrong_one_is_refused(capsys) -> None:
    with pytest.raises(SystemExit) as exit_code:
        main(["--demo", "list"])
    assert exit_code.value.code == 0
    out = capsys.readouterr().out
    assert "dgx-a100" in out and "r470" in out and "mig-toggle" in out
    with pytest.raises(SystemExit) as exit_code:
        main(["snapshot", "--json", "--demo", "dgx-a100:r999"])
    assert exit_code.value.code == 2 and "unknown demo variant or story 'r999'" in capsys.readouterr().err
