"""Faults the monitor must survive: a workload that hangs (shown as stalled) or floods its channel with garbage
and huge lines, and a machine whose /proc and /sys files are missing, empty or garbage (hypothesis)."""

from __future__ import annotations

import functools
import os
import sys
import textwrap
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hwtop.session.sampler import Sampler
from tests.waiting import wait_until


def fake_job(tmp_path: Path, body: str) -> str:
    """An executable that stands where `python -m workload.job ...` would: it ignores its arguments."""
    script = tmp_path / "fake-python"
    script.write_text(f"#!{sys.executable}\n" + textwrap.dedent(body))
    script.chmod(0o755)
    return str(script)


def monitor_with(tmp_path: Path, body: str, monkeypatch, stall_s: float = 15.0):
    from hwtop.workload import launcher, monitor

    python = fake_job(tmp_path, body)
    monkeypatch.setattr(monitor, "WorkloadProcess", functools.partial(launcher.WorkloadProcess, python=python))
    monkeypatch.setattr(monitor, "STALL_S", stall_s)
    return monitor.WorkloadMonitor(["--scenario", "balanced"])


@pytest.mark.slow  # over the fast suite's minute on two cores (--durations)
def test_a_hung_workload_is_shown_as_stalled(tmp_path, monkeypatch):
    job = monitor_with(tmp_path, """
        import json, os, time
        os.write(1, (json.dumps({"event": "started", "rank": 0, "pid": os.getpid()}) + "\\n").encode())
        os.write(1, (json.dumps({"event": "step", "rank": 0, "step": 1, "step_time_s": 0.1}) + "\\n").encode())
        time.sleep(60)   # hangs: no telemetry, still alive
    """, monkeypatch, stall_s=1.0)
    try:
        assert wait_until(lambda: job.state().status == "running")
        assert wait_until(lambda: job.state().status == "stalled", timeout=10)
        assert job.state().ranks[0].step == 1
    finally:
        job.stop()
    assert job.state().status == "stopped"


def test_a_flood_of_garbage_and_huge_lines_is_counted_and_skipped(tmp_path, monkeypatch):
    job = monitor_with(tmp_path, """
        import json, os, sys
        out = sys.stdout.buffer
        out.write(b"not json at all\\n")
        out.write(b"[1, 2, 3]\\n")
        out.write(b"{" + b"x" * 200000 + b"\\n")       # far over the 64 KiB limit
        out.write(b"\\xff\\xfe binary\\n")
        for step in range(1, 4):
            out.write((json.dumps({"event": "step", "rank": 0, "step": step, "step_time_s": 0.2}) + "\\n").encode())
        out.flush()
    """, monkeypatch)
    assert wait_until(lambda: job.state().status in ("finished", "crashed"))
    job._reader.join(10)
    state = job.state()
    assert state.status == "finished" and state.ranks[0].step == 3
    assert state.garbage_lines == 4  # text, a JSON list (not a record), the huge line, the binary one
    job.stop()


FILES = ("proc/stat", "proc/loadavg", "proc/uptime", "proc/diskstats", "proc/net/dev", "proc/sys/kernel/hostname",
         "proc/sys/kernel/osrelease", "proc/1/stat", "proc/1/status", "proc/1/cmdline",
         "sys/devices/system/node/node0/cpulist", "sys/devices/system/node/node0/meminfo",
         "sys/devices/system/node/node0/distance", "sys/devices/system/cpu/online", "sys/block/sda/stat",
         "sys/block/sda/queue/rotational")
contents = st.one_of(st.none(), st.just(""), st.text(max_size=200), st.binary(max_size=200))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.fixed_dictionaries({name: contents for name in FILES}))
@pytest.mark.slow  # over the fast suite's minute on two cores (--durations)
def test_any_proc_and_sys_content_gives_a_snapshot_not_a_traceback(tmp_path_factory, files):
    root = tmp_path_factory.mktemp("root")
    for name, content in files.items():
        if content is None:
            continue  # missing
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content if isinstance(content, bytes) else content.encode("utf-8", "surrogatepass"))
    sampler = Sampler(root=str(root), gpu=None)
    try:
        first, second = sampler.sample(), sampler.sample()
    finally:
        sampler.close()
    for snapshot in (first, second):
        assert snapshot.to_json()  # whole, serialisable
        assert all(error.probe and error.message for error in snapshot.errors)
    if os.access(root / "proc/1/stat", os.R_OK):
        assert isinstance(second.processes, tuple)


def test_a_line_the_probes_cannot_read_is_na_for_what_it_carries_the_rest_read(tmp_path):
    """/proc/stat, /proc/diskstats and /proc/net/dev under the sampler's root, each with one line no kernel writes:
    that core, disk or interface is N/A; the others are read, and no probe error stands on every tick."""
    from tests.sysfs_trees import write

    write(tmp_path, "sys/block/sda/queue/rotational", "0\n")
    write(tmp_path, "sys/block/sdb/queue/rotational", "0\n")
    header = "Inter-| Receive | Transmit\n face |bytes packets|bytes packets\n"
    for tick in (1, 2):
        write(tmp_path, "proc/stat", "cpu  1 2 3 4 5 6 7 8 0 0\n"
                                     f"cpu0 {100 * tick} 0 {100 * tick} {200 * tick} 0 0 0 0 0 0\n"
                                     "cpu1 1 2 x y\ncpu2 5 6\nintr 1\n")
        write(tmp_path, "proc/diskstats", f" 8 0 sda {tick} 0 {8 * tick} 0 0 0 0 0 0 {10 * tick} 0 0 0 0 0\n"
                                          " 8 16 sdb 1 2 3\n")
        write(tmp_path, "proc/net/dev", header + f"  eth0: {1000 * tick} 1 0 0 0 0 0 0 {500 * tick} 2 0 0 0 0 0 0\n"
                                                 "  eth1: 1 2 3\n")
        if tick == 1:
            sampler = Sampler(root=str(tmp_path), gpu=None)
            first = sampler.sample()
    try:
        second = sampler.sample()
    finally:
        sampler.close()
    for snapshot in (first, second):
        assert not [e for e in snapshot.errors if e.probe in ("cpu", "disks", "nics")], snapshot.errors
    assert second.cpu is not None and second.cpu.logical_cores == 3
    assert [core.percent for core in second.cpu.cores] == [50.0, None, None]
    assert [(d.name, d.read_iops is not None) for d in second.disks] == [("sda", True)]
    assert [n.name for n in second.nics] == ["eth0"] and second.nics[0].rx_bytes_per_s is not None
