"""Cost of one tick, per probe and in total, on this machine and at synthetic scale; and of one render.

    python -m benchmarks.tick [--ticks 50]
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import platform
import statistics
import tempfile
import time
from types import SimpleNamespace

import msgspec.structs

from hwtop.demo.nvml import FakeNvmlLibrary
from hwtop.demo.profiles import get_profile
from hwtop.probes.cpu import CpuProbe, CpuStaticInfo
from hwtop.probes.disks import DiskProbe
from hwtop.probes.gpu import NvmlProbe
from hwtop.probes.host import read_host
from hwtop.probes.memory import read_memory
from hwtop.probes.network import NetworkProbe
from hwtop.probes.numa import NumaProbe, node_of_cpu
from hwtop.probes.processes import ProcessProbe
from hwtop.session.sampler import Sampler


def timed(function, ticks: int) -> float:
    """Median milliseconds of one call, after one warm-up call (rates need a previous sample)."""
    function()
    samples = []
    for _ in range(ticks):
        start = time.perf_counter()
        function()
        samples.append((time.perf_counter() - start) * 1000)
    return statistics.median(samples)


def synthetic_proc(root: str, count: int) -> None:
    for pid in range(1000, 1000 + count):
        base = os.path.join(root, "proc", str(pid))
        os.makedirs(base)
        fields = ["S", "1"] + ["0"] * 9 + [str(pid % 97), "3"] + ["0"] * 4 + ["4", "0", "100", "0", "2500"]
        fields += ["0"] * (36 - len(fields)) + ["0"] + ["0"] * 15
        with open(os.path.join(base, "stat"), "w") as handle:
            handle.write(f"{pid} (python) " + " ".join(fields) + "\n")
        with open(os.path.join(base, "cmdline"), "w") as handle:
            handle.write("python\0train.py\0")
        with open(os.path.join(base, "status"), "w") as handle:
            handle.write("Cpus_allowed_list:\t0-255\n")


def synthetic_network(root: str, hcas: int, veths: int):
    """A DGX's network in a sysfs tree: `hcas` InfiniBand ports with counters, two Ethernet ports, `veths`
    containers' veths; returns the /proc/net/dev stand-in, each counter growing every read."""
    def write(path: str, text: str) -> None:
        os.makedirs(os.path.dirname(os.path.join(root, path)), exist_ok=True)
        with open(os.path.join(root, path), "w") as handle:
            handle.write(text)

    for i in range(hcas):
        base = f"sys/class/infiniband/mlx5_{i}/ports/1"
        for name, text in (("state", "4: ACTIVE"), ("rate", "200 Gb/sec (4X HDR)"), ("link_layer", "InfiniBand"),
                           ("counters/port_rcv_data", "123456789"), ("counters/port_xmit_data", "987654321")):
            write(f"{base}/{name}", text + "\n")
    names = ["lo", "enp225s0f0", "enp225s0f1"] + [f"veth{i:05x}" for i in range(veths)]
    for name in names:
        write(f"sys/class/net/{name}/operstate", "up\n")
        write(f"sys/class/net/{name}/type", "772\n" if name == "lo" else "1\n")
    state = [0]

    def counters() -> dict[str, tuple[int, int]]:
        state[0] += 1
        return {name: (state[0] * 1000, state[0] * 500) for name in names}
    return counters


def synthetic_cores(count: int):
    state = [0]

    def source():
        state[0] += 1
        t = state[0]
        return [SimpleNamespace(user=t * 50 + i, nice=0, system=t * 10, idle=t * 40, iowait=0, irq=0, softirq=0,
                                steal=0) for i in range(count)]
    return source


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--ticks", type=int, default=50)
    ticks = parser.parse_args().ticks
    print(f"# hwtop tick benchmark — {time.strftime('%Y-%m-%d')} — {platform.node()}, {os.cpu_count()} CPUs, "
          f"Python {platform.python_version()}")
    print(f"# rerun: python -m benchmarks.tick --ticks {ticks}   (median of {ticks} ticks, ms)\n")

    print("## this machine, per probe")
    numa = NumaProbe()
    cpu = CpuProbe(static=CpuStaticInfo(start=False))
    disks = DiskProbe()
    procs = ProcessProbe()
    network = NetworkProbe()
    mapping = node_of_cpu(numa.read())
    rows = [
        ("host", timed(read_host, ticks)),
        ("memory", timed(read_memory, ticks)),
        ("numa", timed(numa.read, ticks)),
        ("cpu", timed(lambda: cpu.read(mapping), ticks)),
        ("disks", timed(disks.read, ticks)),
        (f"network ({len(network.read())} ports)", timed(network.read, ticks)),
        (f"processes ({len(procs.pids())} pids)", timed(procs.read, ticks)),
    ]
    sampler = Sampler(gpu=NvmlProbe())
    rows.append(("whole tick (Sampler.sample, NVML absent)", timed(sampler.sample, ticks)))
    for name, ms in rows:
        print(f"| {name:<44} | {ms:8.3f} ms |")

    print("\n## synthetic scale")
    print("| what | size | ms/tick | NVML calls/tick |")
    print("|---|---|---|---|")
    for count in (2, 64, 256):
        probe = CpuProbe(times_source=synthetic_cores(count), freq_source=lambda: [],
                         static=CpuStaticInfo(start=False))
        nodes = {i: i * 8 // count for i in range(count)}
        print(f"| cpu cores over 8 NUMA nodes | {count} | {timed(lambda p=probe, n=nodes: p.read(n), ticks):.3f} | |")
    for gpus in (1, 8, 16):
        profile = dataclasses.replace(get_profile("dgx-a100"), gpu_count=gpus)
        clock = [0.0]
        fake = FakeNvmlLibrary(profile, clock=lambda c=clock: c[0])
        probe = NvmlProbe(fake.pynvml, clock=lambda c=clock: c[0])
        probe.read()

        def tick(p=probe, c=clock):
            c[0] += 1.0
            p.read()
        ms = timed(tick, ticks)
        before = sum(fake.calls.values())
        tick()
        per_tick = sum(fake.calls.values()) - before
        print(f"| GPUs (fake NVML, dgx-a100 cards) | {gpus} | {ms:.3f} | {per_tick} |")
    for hcas, veths in ((8, 0), (8, 200)):
        with tempfile.TemporaryDirectory() as root:
            counters = synthetic_network(root, hcas, veths)
            probe = NetworkProbe(root, counters=counters)
            print(f"| network (synthetic sysfs: {hcas} IB ports, 2 Ethernet, {veths} veths) | {hcas + 2 + veths} | "
                  f"{timed(probe.read, ticks):.3f} | |")
    for count in (100, 1000, 5000):
        with tempfile.TemporaryDirectory() as root:
            synthetic_proc(root, count)
            probe = ProcessProbe(root)
            print(f"| processes (synthetic /proc) | {count} | {timed(probe.read, max(5, ticks // 5)):.3f} | |")

    print("\n## advice (all 13 rules over the 120 s window, one update)")
    from hwtop.advice.engine import AdviceEngine
    from hwtop.demo.topology import read_demo_topology

    for profile_name, cores in (("rtx3090", 16), ("dgx-a100", 256)):
        clock = [0.0]
        fake = FakeNvmlLibrary(profile_name, clock=lambda c=clock: c[0])
        probe = NvmlProbe(fake.pynvml, clock=lambda c=clock: c[0])
        topology, numa = read_demo_topology(profile_name, NvmlProbe(FakeNvmlLibrary(profile_name).pynvml))
        cpu_probe = CpuProbe(times_source=synthetic_cores(cores), freq_source=lambda: [],
                             static=CpuStaticInfo(start=False))
        base = Sampler(gpu=None).sample()
        from hwtop.model.snapshot import ProcessInfo

        ranks = tuple(ProcessInfo(41000 + i, 40999, "bench", "python", "python train.py", "R", 99.0, 1 << 30, 8,
                                  tuple(range(cores))) for i in range(8))
        base = msgspec.structs.replace(base, processes=base.processes + ranks)  # the GPU jobs are visible: rules run
        frames = []
        for tick_no in range(121 + ticks + 1):  # times only go forward: a replayed time would reset the engine
            clock[0] += 1.0
            system, gpus = probe.read(base.processes)
            frames.append(msgspec.structs.replace(base, time=base.time + tick_no, cpu=cpu_probe.read({}), gpus=gpus,
                                              gpu_system=system, topology=topology, numa=numa))
        engine = AdviceEngine()
        for frame in frames[:120]:
            engine.update(frame)
        rest = iter(frames[120:])

        def advise(e=engine, r=rest):
            e.update(next(r))
        print(f"| advice engine, {profile_name} ({cores} cores, {len(gpus)} GPUs) | {timed(advise, ticks):8.3f} ms |")

    print("\n## render (widget text for one frame, no terminal I/O)")
    from benchmarks.factories_for_bench import render_costs

    for name, ms in render_costs(timed, ticks):
        print(f"| {name:<44} | {ms:8.3f} ms |")


if __name__ == "__main__":
    main()
