from __future__ import annotations

import os
import time
from types import SimpleNamespace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hwtop.probes.cpu import CpuProbe, CpuStaticInfo, core_load
from hwtop.session.sampler import Sampler


def times(user=0.0, nice=0.0, system=0.0, idle=0.0, iowait=0.0, irq=0.0, softirq=0.0, steal=0.0):
    return SimpleNamespace(user=user, nice=nice, system=system, idle=idle, iowait=iowait, irq=irq,
                           softirq=softirq, steal=steal, guest=0.0, guest_nice=0.0)


def _tuple(ns: SimpleNamespace) -> tuple[float, ...]:
    return (ns.user, ns.nice, ns.system, ns.idle, ns.iowait, ns.irq, ns.softirq, ns.steal)


def test_split_adds_up() -> None:
    before = _tuple(times(100, 0, 50, 1000, 10, 1, 1, 0))
    after = _tuple(times(160, 10, 70, 1000, 20, 1, 1, 0))  # 70 user+nice, 20 system, 10 iowait of 100
    load = core_load(0, 0, before, after)
    assert load.percent == 90.0
    assert load.user == 70.0 and load.system == 20.0 and load.iowait == 10.0 and load.steal == 0.0


def test_first_tick_and_reset_are_unknown() -> None:
    assert core_load(0, 0, None, _tuple(times(1, 0, 1, 1))).percent is None
    assert core_load(0, 0, _tuple(times(100, 0, 1, 1)), _tuple(times(5, 0, 1, 1))).percent is None


class Script:
    def __init__(self, samples):
        self.samples = list(samples)

    def __call__(self):
        return self.samples.pop(0)


def test_probe_uses_previous_sample_and_node_map() -> None:
    source = Script([[times(idle=100), times(idle=100)], [times(user=50, idle=150), times(idle=200)]])
    probe = CpuProbe(times_source=source, freq_source=lambda: [], static=CpuStaticInfo(start=False),
                     loadavg=lambda: (1.0, 0.5, 0.25))
    first = probe.read({0: 0, 1: 1})
    assert [c.percent for c in first.cores] == [None, None] and first.percent is None
    second = probe.read({0: 0, 1: 1})
    assert [c.percent for c in second.cores] == [50.0, 0.0]
    assert [c.numa_node for c in second.cores] == [0, 1]
    assert second.percent == 25.0 and second.load_average == (1.0, 0.5, 0.25)
    assert all(c.mhz is None for c in second.cores)  # no frequency source: None, never 0


def test_core_frequencies_are_read_every_five_seconds_and_carried_between() -> None:
    """psutil reads three sysfs files a core for them: a 1 s tick reads them on the first tick, then every 5 s."""
    reads, now = [], [100.0]

    def freqs():
        reads.append(now[0])
        return [SimpleNamespace(current=2000.0 + len(reads)), SimpleNamespace(current=0.0)]  # 0: not known

    source = Script([[times(idle=i), times(idle=i)] for i in range(1, 9)])
    probe = CpuProbe(times_source=source, freq_source=freqs, static=CpuStaticInfo(start=False),
                     clock=lambda: now[0])
    shown = []
    for _ in range(8):
        shown.append([c.mhz for c in probe.read({}).cores])
        now[0] += 1.0
    assert reads == [100.0, 105.0]
    assert shown[0] == shown[4] == [2001.0, None] and shown[5] == shown[7] == [2002.0, None]


def test_a_failing_frequency_source_leaves_mhz_unknown() -> None:
    def broken():
        raise OSError("no cpufreq")

    probe = CpuProbe(times_source=Script([[times(idle=1)]]), freq_source=broken, static=CpuStaticInfo(start=False))
    assert [c.mhz for c in probe.read({}).cores] == [None]


def test_cpu_hotplug_restarts_rates() -> None:
    source = Script([[times(idle=1)], [times(user=5, idle=2), times(idle=3)]])
    probe = CpuProbe(times_source=source, freq_source=lambda: [], static=CpuStaticInfo(start=False))
    probe.read({})
    assert all(c.percent is None for c in probe.read({}).cores)


@pytest.mark.slow
@pytest.mark.skipif(not hasattr(os, "sched_setaffinity") or (os.cpu_count() or 1) < 2, reason="needs 2 CPUs")
def test_pinned_busy_core_reads_near_full_and_idle_core_does_not() -> None:
    """The live machine: a process spinning on the last CPU reads near 100 % there."""
    import multiprocessing

    busy_cpu = os.cpu_count() - 1
    own = os.sched_getaffinity(0)
    sampler = Sampler()
    sampler.cpu.static.ready.wait(15)  # py-cpuinfo's one-off work would load a core too
    ctx = multiprocessing.get_context("spawn")
    proc = ctx.Process(target=_spin, args=(busy_cpu, 3.0))
    proc.start()
    try:
        os.sched_setaffinity(0, {0})
        time.sleep(0.8)  # the child starts and pins itself
        sampler.sample()
        time.sleep(1.0)
        snapshot = sampler.sample()
    finally:
        os.sched_setaffinity(0, own)
        proc.join(5)
    busy = snapshot.cpu.cores[busy_cpu].percent
    # Only the busy core is asserted: whether CPU 0 is idle depends on whatever else the box runs.
    assert busy is not None and busy > 85, snapshot.cpu.cores


def _spin(cpu: int, seconds: float) -> None:
    os.sched_setaffinity(0, {cpu})
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        pass


# ----- the CPU's static facts: the kernel's files first, py-cpuinfo only for what they lack -----

def cache_tree(root, sockets: int = 2, cores: int = 4) -> None:
    """`sockets` x `cores` cores with two SMT threads each, as sysfs lays them out: L1d/L1i/L2 shared by the two
    threads of a core, one L3 per socket (its size written in M, as some kernels do)."""
    from tests.sysfs_trees import write

    threads = sockets * cores * 2
    for cpu in range(threads):
        core = cpu % (sockets * cores)
        socket = core // cores
        siblings = f"{core},{core + sockets * cores}"
        l3 = f"{socket * cores}-{socket * cores + cores - 1},{sockets * cores + socket * cores}-" \
             f"{sockets * cores + socket * cores + cores - 1}"
        for index, (level, kind, size, shared) in enumerate([
                (1, "Data", "48K", siblings), (1, "Instruction", "32K", siblings), (2, "Unified", "2048K", siblings),
                (3, "Unified", "32M", l3)]):
            base = f"sys/devices/system/cpu/cpu{cpu}/cache/index{index}"
            for name, value in (("level", level), ("type", kind), ("size", size), ("shared_cpu_list", shared)):
                write(root, f"{base}/{name}", f"{value}\n")
    write(root, "proc/cpuinfo", "".join(f"processor\t: {cpu}\nvendor_id\t: GenuineIntel\nmodel name\t: "
                                        "Intel(R) Xeon(R) Platinum 8480+\n\n" for cpu in range(threads)))


@pytest.mark.parametrize(("text", "expected"), [
    ("32K\n", 32 << 10), ("1024K", 1 << 20), ("2M", 2 << 20), ("1G", 1 << 30), ("512", 512), ("0K", None),
    ("", None), ("12 KB", None), ("-1K", None), ("K", None)])
def test_a_cache_size_as_sysfs_writes_it(text, expected) -> None:
    from hwtop.probes.cpu_facts import parse_cache_size

    assert parse_cache_size(text) == expected


def test_static_facts_come_from_the_kernel_without_running_py_cpuinfo(tmp_path, monkeypatch) -> None:
    import cpuinfo

    def refuse() -> dict[str, object]:
        raise AssertionError("py-cpuinfo ran although the kernel stated every fact")

    monkeypatch.setattr(cpuinfo, "get_cpu_info", refuse)
    cache_tree(tmp_path)
    static = CpuStaticInfo(start=False, root=str(tmp_path))
    static.load()
    assert static.model == "Intel(R) Xeon(R) Platinum 8480+"
    assert static.l2_cache_bytes == 8 * (2048 << 10)  # one per core, not per thread
    assert static.l3_cache_bytes == 2 * (32 << 20)  # one per socket
    assert static.ready.is_set()


def test_what_the_kernel_does_not_state_is_asked_of_py_cpuinfo(tmp_path, monkeypatch) -> None:
    import cpuinfo

    from tests.sysfs_trees import write

    monkeypatch.setattr(cpuinfo, "get_cpu_info", lambda: {"brand_raw": "Neoverse-V2", "l2_cache_size": 1 << 20,
                                                          "l3_cache_size": 114 << 20})
    write(tmp_path, "proc/cpuinfo", "processor\t: 0\nBogoMIPS\t: 2000.00\nCPU implementer\t: 0x41\n")
    static = CpuStaticInfo(start=False, root=str(tmp_path))
    static.load()
    assert (static.model, static.l2_cache_bytes, static.l3_cache_bytes) == ("Neoverse-V2", 1 << 20, 114 << 20)
    monkeypatch.setattr(cpuinfo, "get_cpu_info", lambda: 1 / 0)
    broken = CpuStaticInfo(start=False, root=str(tmp_path))
    broken.load()
    assert (broken.model, broken.l3_cache_bytes) == (None, None) and broken.ready.is_set()


def test_proc_stat_times_are_psutils_figures(tmp_path, monkeypatch) -> None:
    """The probe's own read of /proc/stat gives what it made of psutil.cpu_times(percpu=True) for the same file:
    a kernel with steal time; one without (before 2.6.11, where psutil's record has no steal) reads 0 for it."""
    import psutil

    from hwtop.probes.cpu import _times_tuple, proc_stat_times

    monkeypatch.setattr(psutil, "PROCFS_PATH", str(tmp_path))
    with_steal = ("cpu  10 2 30 4000 5 6 7 8 9 10\ncpu0 123456789 1 2 3 4 5 6 7 8 9\ncpu1 5 4 3 2 1 0 99 12 0 0\n"
                  "intr 1 2 3\nctxt 99\n")
    (tmp_path / "stat").write_text(with_steal)
    assert proc_stat_times(str(tmp_path)) == [_times_tuple(s) for s in psutil.cpu_times(percpu=True)]
    assert proc_stat_times(str(tmp_path))[0][0] == 123456789 / os.sysconf("SC_CLK_TCK")
    assert len(proc_stat_times(str(tmp_path))) == 2
    (tmp_path / "stat").write_text("cpu  1 2 3 4 5 6 7\ncpu0 1 2 3 4 5 6 7\ncpu1 7 6 5 4 3 2 1\n")
    assert [t[7] for t in proc_stat_times(str(tmp_path))] == [0.0, 0.0]


def _core_load_before(index, node, before, after, mhz=None):
    """core_load as it was written before it was written out field by field: the reference it must equal."""
    from hwtop.model.snapshot import CoreLoad
    from hwtop.probes.rates import counter_delta

    if before is None:
        return CoreLoad(index, node, None, mhz=mhz)
    deltas = [counter_delta(b, a) for b, a in zip(before, after, strict=True)]
    if any(d is None for d in deltas):
        return CoreLoad(index, node, None, mhz=mhz)
    user, nice, system, idle, iowait, irq, softirq, steal = (float(d) for d in deltas)
    total = user + nice + system + idle + iowait + irq + softirq + steal
    if total <= 0:
        return CoreLoad(index, node, None, mhz=mhz)

    def pct(value):
        return round(100.0 * value / total, 2)

    busy = total - idle - iowait
    return CoreLoad(index, node, pct(busy), user=pct(user + nice), system=pct(system), iowait=pct(iowait),
                    irq=pct(irq + softirq), steal=pct(steal), mhz=mhz)


_times = st.tuples(*[st.one_of(st.integers(0, 10**9), st.floats(0, 1e7, allow_nan=False))] * 8)


@settings(max_examples=300, deadline=None)
@given(before=st.one_of(st.none(), _times), after=_times, mhz=st.one_of(st.none(), st.floats(0, 5000)))
@pytest.mark.slow  # over the fast suite's minute on two cores (--durations)
def test_core_load_is_what_it_was(before, after, mhz) -> None:
    assert core_load(3, 1, before, after, mhz) == _core_load_before(3, 1, before, after, mhz)
    assert core_load(3, 1, after, after) == _core_load_before(3, 1, after, after)
