"""Every rule, against timelines that must fire it and near misses that must not; evidence carries the numbers."""

from __future__ import annotations

import pytest
from msgspec.structs import replace

from hwtop.advice.engine import AdviceEngine
from hwtop.demo.profiles import GIB, MIB
from hwtop.model.snapshot import DiskSnapshot, GpmMetrics, MemorySnapshot, Topology
from hwtop.model.workload import NonfiniteEvent, OomEvent
from tests.advice_timeline import Timeline, find, ids, plain_gpu, process, rank, run, workload


def ticks(timeline: Timeline, count: int, **kwargs):
    return [timeline.tick(**kwargs) for _ in range(count)]


# ----- cuda-oom -----

def test_oom_event_is_critical_at_once_and_names_the_batch():
    t = Timeline()
    job = workload(rank(0), oom=OomEvent(rank=0, batch_size=64, largest_fit=32, message="CUDA out of memory",
                                 time=t.time + 1))
    found = run([t.tick(workload=job)])[-1]
    finding = find(found, "cuda-oom")
    assert finding.severity == "critical"
    assert "batch 64" in finding.evidence[0] and "batch 32 was the largest" in finding.evidence[0]
    assert any("from 32" in fix for fix in finding.fix)


def test_oom_event_clears_once_old():
    t = Timeline()
    job = workload(rank(0), oom=OomEvent(rank=0, batch_size=64, largest_fit=None, time=t.time + 1))
    frames = [t.tick(workload=job)] + [t.tick(seconds=10, workload=job) for _ in range(14)]
    history = run(frames)
    assert "cuda-oom" in ids(history[0])
    assert "cuda-oom" in ids(history[12])  # 120 s after the event it still holds
    assert "cuda-oom" not in ids(history[-1])


@pytest.mark.parametrize(("used_gib", "fires"), [(77.0, True), (75.0, False)])
def test_device_memory_near_full(used_gib, fires):
    t = Timeline("dgx-a100")
    full = lambda g: replace(g, memory_used_bytes=int(used_gib * GIB)) if g.index == 2 else g  # noqa: E731
    found = run(ticks(t, 3, gpu=full))[-1]
    assert ("cuda-oom" in ids(found)) is fires
    if fires:
        finding = find(found, "cuda-oom")
        assert finding.gpus == (2,) and "77.0 GiB of 80.0 GiB" in finding.evidence[0]


@pytest.mark.parametrize(("reserved_gib", "fragmented"), [(6.0, True), (2.4, False)])
def test_fragmentation_adds_expandable_segments(reserved_gib, fragmented):
    t = Timeline()
    job = workload(rank(0, allocated=2 * GIB, reserved=int(reserved_gib * GIB)),
                   oom=OomEvent(rank=0, batch_size=64, time=t.time + 1))
    finding = find(run([t.tick(workload=job)])[-1], "cuda-oom")
    assert any("expandable_segments:True" in fix for fix in finding.fix) is fragmented
    assert any("reserved 6.0 GiB is 3.0x" in e for e in finding.evidence) is fragmented


# ----- gpu-starved -----

def test_data_wait_fires_after_its_hold_with_the_fraction():
    t = Timeline()
    job = workload(rank(0, wait=0.83), rank(1, wait=0.81), num_workers=0)
    history = run(ticks(t, 8, workload=job))
    assert "gpu-starved" not in ids(history[4])  # 4 s: not held long enough
    finding = find(history[6], "gpu-starved")
    assert "82% of the time" in finding.evidence[0] and "rank 0 83%" in finding.evidence[0]
    # 16 samples x 8 ms = 0.13 s a batch against 0.036 s of step (0.2 s, 82% waiting): 3.5 workers keep up
    assert finding.fix[0].startswith("DataLoader(num_workers=5) (now 0): a batch takes one worker 3.6x")


@pytest.mark.parametrize("wait", [0.25, 0.0, None])
def test_data_wait_below_threshold_stays_silent(wait):
    t = Timeline()
    assert "gpu-starved" not in ids(run(ticks(t, 10, workload=workload(rank(0, wait=wait))))[-1])


def test_data_wait_with_a_busy_gpu_is_not_starvation():
    t = Timeline("rtx3090")  # GPU0 is busy (~86%) running pid 41000
    job = workload(rank(0, wait=0.6, pid=41000), device="cuda")
    assert "gpu-starved" not in ids(run(ticks(t, 10, workload=job))[-1])


def test_starved_gpu_without_telemetry_from_pegged_workers():
    t = Timeline("rtx3090")
    t.fake.set_load(0, 0.2)
    procs = (process(41000, cpu=40.0, affinity=tuple(range(16))),
             process(41010, 41000, cpu=99.0, name="pt_data_worker"), process(41011, 41000, cpu=98.0,
                                                                                 name="pt_data_worker"))
    finding = find(run(ticks(t, 8, processes=procs))[-1], "gpu-starved")
    assert finding.gpus == (0,) and "GPU0 util 20%" in finding.evidence[0]
    assert "41010 99%" in finding.evidence[1]
    relaxed = procs[:2] + (replace(procs[2], cpu_percent=40.0),)
    assert "gpu-starved" not in ids(run(ticks(Timeline("rtx3090"), 8, processes=relaxed))[-1])


STORAGE_FIX = "Check storage: if iowait is high or the dataset disk is near its class's throughput, see io-bound."
PIN_FIX = "pin_memory=True, and .to(device, non_blocking=True), so copies overlap compute."


def test_data_wait_without_the_workers_arithmetic_names_a_count_from_the_cores():
    """The step waits all of its time (no own time to weigh a batch against): the fix is a count from the cores,
    with persistent workers once there are any, and pinned memory for a CUDA job."""
    t = Timeline()
    job = workload(rank(0, wait=1.0), rank(1, wait=1.0), num_workers=0, device="cuda")
    finding = find(run(ticks(t, 8, workload=job))[-1], "gpu-starved")
    assert finding.title == "Training waits on data loading"
    assert finding.evidence == (
        "the training step waits for its next batch 100% of the time (ranks 0, 1 100%; limit 30%)",
        "DataLoader num_workers=0, pin_memory=False, 8.0 ms CPU per sample")
    assert finding.fix == (
        "Raise DataLoader num_workers from 0 to about 7 (16 logical CPUs on 8 cores the job may use / 2 rank(s), one "
        "left for the main process).",
        "persistent_workers=True once num_workers > 0, so workers survive across epochs.", PIN_FIX, STORAGE_FIX)
    assert (finding.scope, finding.gpus, finding.pids, finding.measure) == ("job", (), (50000, 50001), 100.0)


def test_data_wait_of_a_job_that_sent_no_worker_count():
    t = Timeline()
    job = workload(rank(0, wait=0.83), rank(1, wait=0.81), num_workers=None, device="cuda")
    finding = find(run(ticks(t, 8, workload=job))[-1], "gpu-starved")
    assert finding.evidence == (
        "the training step waits for its next batch 82% of the time (rank 0 83%, rank 1 81%; limit 30%)",)
    assert finding.fix == (
        "Raise DataLoader num_workers to about 7 (16 logical CPUs on 8 cores the job may use / 2 rank(s), one left "
        "for the main process).", PIN_FIX, STORAGE_FIX)


# ----- cpu-single-core -----

def test_one_pegged_core_while_the_gpu_waits():
    t = Timeline("rtx3090")
    t.fake.set_load(0, 0.23)
    procs = (process(41000, cpu=99.5, affinity=tuple(range(16))),)
    finding = find(run(ticks(t, 8, cores={3: 100.0}, processes=procs))[-1], "cpu-single-core")
    assert finding.cores == (3,)
    assert "core 3 at 100% while 15 of 15 other cores" in finding.evidence[0]
    assert "GPU0 util 23%" in finding.evidence[1] and "py-spy top --pid 41000" in finding.fix[1]


@pytest.mark.parametrize(("load", "cores"), [
    (0.9, {3: 100.0}),  # the GPU is busy: the core is not holding it up
    (0.2, {3: 100.0, 7: 100.0}),  # two pegged cores: not one core
    (0.2, {i: 100.0 if i == 3 else 60.0 for i in range(16)}),  # the others are busy too
])
def test_single_core_near_misses(load, cores):
    t = Timeline("rtx3090")
    t.fake.set_load(0, load)
    assert "cpu-single-core" not in ids(run(ticks(t, 8, cores=cores))[-1])


@pytest.mark.parametrize(("step", "fires"), [(None, False), (0, False), (1, True)])
def test_single_core_waits_for_the_embedded_jobs_first_step(step, fires):
    """Seen on a real H200: the job's CUDA start-up pegs one core for ~6 s while the GPU waits; that is not the
    loading bottleneck this rule names. From the first step on, the same picture is."""
    t = Timeline("rtx3090")
    t.fake.set_load(0, 0.23)
    job = workload(replace(rank(0, pid=41000), step=step), device="cuda")
    found = ids(run(ticks(t, 8, cores={3: 100.0}, workload=job))[-1])
    assert ("cpu-single-core" in found) == fires


def test_single_core_needs_a_gpu_to_wait():
    assert "cpu-single-core" not in ids(run(ticks(Timeline(), 8, cores={3: 100.0}))[-1])


# ----- numa-misplaced -----

@pytest.mark.parametrize(("affinity", "fires"), [(tuple(range(64, 128)), True), (tuple(range(0, 64)), False),
                                                 (tuple(range(256)), False)])
@pytest.mark.slow  # over the fast suite's minute on two cores (--durations)
def test_dgx_job_on_the_wrong_node(affinity, fires):
    t = Timeline("dgx-a100", cores=16, topology=True)
    procs = (process(41000, cpu=90.0, affinity=affinity),)
    found = run(ticks(t, 4, processes=procs))[-1]
    assert ("numa-misplaced" in ids(found)) is fires
    if fires:
        finding = find(found, "numa-misplaced")
        assert finding.gpus == (0,) and finding.pids == (41000,)
        assert "CPUs 64-127 (node 1)" in finding.evidence[0]
        assert "attached to node 0 (CPUs 0-63,128-191)" in finding.evidence[1]
        assert "distance node 0→1 is 32, local 10" in finding.evidence[2]
        assert finding.fix[0].startswith("numactl --cpunodebind=0 --membind=0")


# ----- pcie-degraded -----

def test_degraded_link_only_while_busy():
    t = Timeline("rtx3090")
    t.fake.set_pcie_link(0, 3, 8)
    busy = run(ticks(t, 7))[-1]
    finding = find(busy, "pcie-degraded")
    assert "Gen3 x8" in finding.evidence[0] and "Gen4 x16" in finding.evidence[0]
    t.fake.set_load(0, 0.0)
    assert "pcie-degraded" not in ids(run(ticks(t, 7))[-1])


def test_full_link_is_not_degraded():
    assert "pcie-degraded" not in ids(run(ticks(Timeline("rtx3090"), 7))[-1])


# ----- topology-slow-p2p -----

def _pairs_topology() -> Topology:
    links = (("X", "NV4", "SYS", "SYS"), ("NV4", "X", "SYS", "SYS"), ("SYS", "SYS", "X", "NV4"),
             ("SYS", "SYS", "NV4", "X"))
    return Topology((), links, links, "test")


def _job(gpu_ids, utils=None, names=None):
    gpus = tuple(plain_gpu(i, (utils or {}).get(i, 95.0), (60000 + i,), **({"name": names[i]} if names else {}))
                 for i in range(4) if i in gpu_ids) + tuple(plain_gpu(i, 0.0) for i in range(4) if i not in gpu_ids)
    procs = tuple(process(60000 + i, ppid=59999, cpu=100.0) for i in gpu_ids)
    return dict(gpus=tuple(sorted(gpus, key=lambda g: g.index)), processes=procs, topology=_pairs_topology())


def test_ranks_across_sys_when_nvlink_pair_is_free():
    found = run(ticks(Timeline(), 7, **_job({0, 2})))[-1]
    finding = find(found, "topology-slow-p2p")
    assert "GPU0↔GPU2 connect through SYS" in finding.evidence[0]
    assert "GPUs 0,1 are connected no worse than NV4" in finding.evidence[1]
    assert "CUDA_VISIBLE_DEVICES=0,1" in finding.fix[0] and any("NCCL_DEBUG=INFO" in f for f in finding.fix)


def test_ranks_on_an_nvlink_pair_are_fine():
    assert "topology-slow-p2p" not in ids(run(ticks(Timeline(), 7, **_job({0, 1})))[-1])


def test_two_sockets_without_a_better_path_stay_silent():
    t = Timeline("ws-2x3090", topology=True)
    procs = (process(41000, ppid=40990), process(41001, ppid=40990))
    found = run(ticks(t, 7, processes=procs))[-1]
    assert t.topology.gpu_links[0][1] == "SYS"
    assert "topology-slow-p2p" not in ids(found)


def test_mixed_models_in_one_job():
    names = {0: "NVIDIA GeForce RTX 3090", 1: "NVIDIA GeForce RTX 3080"}
    found = run(ticks(Timeline(), 7, **_job({0, 1}, names=names | {2: "x", 3: "x"})))[-1]
    finding = next(f for f in found if f.title == "Mixed GPU models in one job")
    assert "GPU1 NVIDIA GeForce RTX 3080" in finding.evidence[0]


@pytest.mark.parametrize(("lagging", "fires"), [(40.0, True), (80.0, False)])
def test_straggler(lagging, fires):
    found = run(ticks(Timeline(), 12, **_job({0, 1}, utils={0: 96.0, 1: lagging})))[-1]
    stragglers = [f for f in found if f.title == "A rank lags the others"]
    assert bool(stragglers) is fires
    if fires:
        assert stragglers[0].gpus == (1,) and "GPU1 busy 40% against 96%" in stragglers[0].evidence[0]


# ----- io-bound -----

def test_iowait_while_the_gpu_waits():
    t = Timeline("rtx3090")
    t.fake.set_load(0, 0.2)
    finding = find(run(ticks(t, 8, iowait=34.0))[-1], "io-bound")
    assert "34% of the time" in finding.evidence[0] and "GPU0 util 20%" in finding.evidence[-1]


def test_hdd_at_its_class_throughput_while_the_job_waits_for_data():
    t = Timeline()
    disks = (DiskSnapshot("sda", "hdd", 140e6, 0.0, 300.0, 0.0, 70.0),)
    job = workload(rank(0, wait=0.7))
    finding = find(run(ticks(t, 8, disks=disks, workload=job))[-1], "io-bound")
    assert "sda (hdd) reads 140 MB/s, 93% of its class's ~150 MB/s" in finding.evidence[0]


@pytest.mark.parametrize("case", ["busy gpu", "low iowait", "nvme far from its class"])
def test_io_near_misses(case):
    t = Timeline("rtx3090")
    t.fake.set_load(0, 0.9 if case == "busy gpu" else 0.2)
    disks = (DiskSnapshot("nvme0n1", "nvme", 1.5e9, 0.0, 9000.0, 0.0, 40.0),)
    iowait = 5.0 if case != "busy gpu" else 40.0
    assert "io-bound" not in ids(run(ticks(t, 8, iowait=iowait, disks=disks))[-1])


def test_a_disk_busy_all_the_time_below_its_class_throughput():
    t = Timeline("rtx3090")
    t.fake.set_load(0, 0.2)
    disks = (DiskSnapshot("nvme0n1", "nvme", 1.5e9, 0.0, 9000.0, 0.0, 97.0),)
    finding = find(run(ticks(t, 8, iowait=5.0, disks=disks))[-1], "io-bound")
    assert finding.title == "Storage is holding up training"
    assert finding.evidence == ("nvme0n1 (nvme) busy 97% of the time, reading 1.50 GB/s", "GPU0 util 20%")
    assert finding.fix == (
        "Faster storage for the dataset: NVMe ~7 GB/s, SATA SSD ~550 MB/s, HDD ~150 MB/s.",
        "Let the page cache hold it: a dataset smaller than the available RAM (200 GiB here) is read from disk once.",
        "Memory-mapped or sharded datasets (numpy.memmap, WebDataset tar shards, LMDB) read sequentially instead of "
        "one small file per sample.",
        "More DataLoader workers keep more reads in flight.")
    assert (finding.scope, finding.gpus, finding.pids) == ("", (0,), ())


# ----- host-memory-pressure -----

@pytest.mark.parametrize(("available_gib", "fires"), [(10.0, True), (40.0, False)])
def test_low_available_memory(available_gib, fires):
    memory = MemorySnapshot(256 * GIB, int(available_gib * GIB), 200 * GIB, 8 * GIB, 0)
    found = run(ticks(Timeline(), 8, memory=memory))[-1]
    assert ("host-memory-pressure" in ids(found)) is fires
    if fires:
        assert "available RAM 10.0 GiB of 256.0 GiB (3.9%" in find(found, "host-memory-pressure").evidence[0]


@pytest.mark.parametrize(("training", "fires"), [(True, True), (False, False)])
def test_swap_growth_during_training(training, fires):
    t = Timeline()
    frames = [t.tick(memory=MemorySnapshot(256 * GIB, 100 * GIB, 150 * GIB, 8 * GIB, k * 100 * MIB),
                     workload=workload(rank(0)) if training else None) for k in range(10)]
    found = run(frames)[-1]
    assert ("host-memory-pressure" in ids(found)) is fires
    if fires:
        finding = find(found, "host-memory-pressure")
        assert "swap used grew by 0.9 GiB in the last 9 s" in finding.evidence[0]
        assert any("does not relieve GPU memory" in f for f in finding.fix)


# ----- gpu-throttled -----

def test_thermal_throttle_while_busy_is_a_warning():
    t = Timeline("rtx3090")
    t.fake.force_reasons(0, "sw_thermal")
    finding = find(run(ticks(t, 7))[-1], "gpu-throttled")
    assert finding.severity == "warning" and "SW thermal" in finding.evidence[0]
    assert any("Cooling" in f for f in finding.fix)


def test_power_cap_alone_is_info_and_idle_throttle_is_silent():
    t = Timeline("rtx3090")
    t.fake.force_reasons(0, "sw_power_cap")
    assert find(run(ticks(t, 7))[-1], "gpu-throttled").severity == "info"
    idle = Timeline("rtx3090")
    idle.fake.set_load(0, 0.0)
    idle.fake.force_reasons(0, "hw_slowdown")
    assert "gpu-throttled" not in ids(run(ticks(idle, 7))[-1])


# ----- gpu-errors -----

def test_uncorrectable_ecc_and_lost_gpu_are_critical():
    t = Timeline("dgx-a100")
    t.fake.set_ecc(3, 0, 2)
    t.fake.lose_gpu(5)
    found = run(ticks(t, 2))[-1]
    errors = {f.scope: f for f in found if f.id == "gpu-errors"}
    assert errors["GPU3"].severity == "critical" and "2 uncorrectable" in errors["GPU3"].evidence[0]
    assert errors["GPU5"].title == "GPU5 lost"


@pytest.mark.parametrize(("growth", "fires"), [(150, True), (50, False)])
@pytest.mark.slow  # over the fast suite's minute on two cores (--durations)
def test_corrected_ecc_growth(growth, fires):
    t = Timeline("dgx-a100")
    frames = ticks(t, 2)
    t.fake.set_ecc(1, growth, 0)
    frames += ticks(t, 6)  # the slow tier re-reads ECC every 5 s
    found = run(frames)[-1]
    assert ("gpu-errors" in ids(found)) is fires
    if fires:
        assert f"0 → {growth}" in find(found, "gpu-errors").evidence[0]


@pytest.mark.parametrize(("xid", "severity", "words"), [(79, "critical", "fallen off the bus"),
                                                       (31, "warning", "page fault"), (1234, "critical", "Xid table")])
@pytest.mark.slow  # over the fast suite's minute on two cores (--durations)
def test_an_xid_event_is_named_then_clears_once_it_is_older_than_the_window(xid, severity, words):
    t = Timeline("dgx-a100")
    frames = ticks(t, 2)
    t.fake.report_xid(2, xid)
    frames += ticks(t, 2)
    engine = AdviceEngine()
    found = run(frames, engine)[-1]
    finding = find(found, "gpu-errors")
    assert finding.title == f"GPU2 reported Xid {xid}" and finding.severity == severity
    assert words in finding.evidence[0] and finding.gpus == (2,)
    later = run([t.tick(10.0) for _ in range(20)], engine)  # 200 s on: the report left the 120 s window
    assert "gpu-errors" not in ids(later[-1])


def test_a_failed_row_remap_is_critical_and_outranks_the_xid_that_reported_it():
    t = Timeline("dgx-a100")
    frames = ticks(t, 2)
    t.fake.set_row_remap(6, uncorrectable=8, failed=True)
    t.fake.report_xid(6, 64)
    frames += ticks(t, 6)  # the slow tier re-reads the remapper every 5 s
    finding = find(run(frames)[-1], "gpu-errors")
    assert (finding.title, finding.severity, finding.gpus) == ("GPU6 row remapping failed", "critical", (6,))
    assert "no spare row" in finding.evidence[0] and "8 row(s) remapped after uncorrectable" in finding.evidence[0]
    assert any("RMA" in fix for fix in finding.fix)


@pytest.mark.slow  # over the fast suite's minute on two cores (--durations)
def test_a_pending_remap_is_a_warning_to_reset_the_gpu_when_the_job_allows_from_its_xid_on():
    """One remap reads the same while the Xid 63 that recorded it is in the window and after: a warning, never
    critical for two minutes and then a warning with nothing changed on the GPU."""
    t = Timeline("dgx-a100")
    frames = ticks(t, 2)
    t.fake.set_row_remap(2, uncorrectable=1, pending=True)
    t.fake.report_xid(2, 63)
    frames += ticks(t, 6)
    engine = AdviceEngine()
    xid = find(run(frames, engine)[-1], "gpu-errors")
    assert (xid.title, xid.severity) == ("GPU2 row remap pending: reset needed", "warning")
    assert xid.evidence[1] == "Xid 63 recorded it (NVML event, within the last two minutes)"
    later = run([t.tick(10.0) for _ in range(15)], engine)[-1]  # the Xid left the window; the remap still waits
    pending = find(later, "gpu-errors")
    assert (pending.title, pending.severity) == ("GPU2 row remap pending: reset needed", "warning")
    assert len(pending.evidence) == 1
    assert pending.fix[0].startswith("Reset the GPU when the job allows") and "nvidia-smi -r -i 2" in pending.fix[0]
    t.fake.set_row_remap(2, pending=False)  # reset: the remap took effect
    assert "gpu-errors" not in ids(run([t.tick(10.0) for _ in range(8)], engine)[-1])


@pytest.mark.parametrize(("errors", "fires"), [
    ({"replay": 1}, True), ({"recovery": 2}, True), ({"crc_data": 1}, True),
    ({"crc_flit": 50}, False),  # corrected by replays: under DCGM's 100 a second
    ({"crc_flit": 5000}, True), ({}, False)])
@pytest.mark.slow  # over the fast suite's minute on two cores (--durations)
def test_nvlink_errors_climbing(errors, fires):
    t = Timeline("dgx-a100")
    frames = ticks(t, 2)
    for kind, count in errors.items():
        t.fake.add_nvlink_errors(3, 4, kind, count)
    frames += ticks(t, 6)
    found = run(frames)[-1]
    assert ("gpu-errors" in ids(found)) is fires
    if fires:
        finding = find(found, "gpu-errors")
        assert (finding.title, finding.severity, finding.gpus) == ("GPU3 NVLink errors climbing", "warning", (3,))
        kind, count = next(iter(errors.items()))
        assert "NVLink errors in 7 s: " in finding.evidence[0] and f" +{count}" in finding.evidence[0], finding.evidence


def test_nvlink_counters_reset_by_the_driver_are_no_errors():
    t = Timeline("dgx-a100")
    t.fake.add_nvlink_errors(3, 4, "replay", 40)
    frames = ticks(t, 2)
    t.fake.reset_nvlink_errors(3)
    frames += ticks(t, 6)
    assert "gpu-errors" not in ids(run(frames)[-1])


# ----- amp-available, cudnn-benchmark, amp-overflow -----

@pytest.mark.parametrize(("amp", "profile", "fires"), [("off", "rtx3090", True), ("bf16", "rtx3090", False),
                                                      ("off", "gtx1660s", False), ("off", "a4000", True)])
def test_fp32_job_on_tensor_cores(amp, profile, fires):
    t = Timeline(profile)
    job = workload(rank(0, amp=amp, pid=41000), device="cuda", amp=amp)
    found = run(ticks(t, 12, workload=job))[-1]
    assert ("amp-available" in ids(found)) is fires
    if fires:
        finding = find(found, "amp-available")
        ampere = True  # both cards that fire are Ampere (8.6); the GTX 1660 SUPER has no Tensor Cores
        assert any("allow_tf32" in f for f in finding.fix) is ampere
        assert any("bfloat16" in f for f in finding.fix) is ampere


def test_no_amp_advice_for_a_cpu_job():
    assert "amp-available" not in ids(run(ticks(Timeline(), 12, workload=workload(rank(0))))[-1])


@pytest.mark.parametrize(("tensor", "fires"), [(0.0, True), (35.0, False)])
def test_gpm_says_tensor_cores_idle(tensor, fires):
    t = Timeline("h200")
    gpm = lambda g: replace(g, gpm=GpmMetrics(80.0, 40.0, tensor, 50.0))  # noqa: E731
    found = run(ticks(t, 12, gpu=gpm))[-1]
    assert ("amp-available" in ids(found)) is fires


@pytest.mark.parametrize(("config", "fires"), [({}, True), ({"cudnn_benchmark": True}, False),
                                               ({"model": "mlp"}, False), ({"device": "cpu"}, False)])
def test_cudnn_benchmark(config, fires):
    settings = {"device": "cuda"} | config
    found = run(ticks(Timeline(), 7, workload=workload(rank(0), **settings)))[-1]
    assert ("cudnn-benchmark" in ids(found)) is fires


def test_scale_falling_repeatedly():
    scales = tuple([65536.0] * 10 + [32768.0] * 10 + [16384.0] * 10 + [8192.0] * 10 + [4096.0] * 5)
    found = run([Timeline().tick(workload=workload(rank(0, amp="fp16", step=200, scales=scales)))])[-1]
    finding = find(found, "amp-overflow")
    assert "fell 4 times in its last 45 steps (65536 → 4096)" in finding.evidence[0]


def test_scale_calibration_at_the_start_is_normal():
    scales = (65536.0, 32768.0, 16384.0, 8192.0) + (8192.0,) * 20
    found = run([Timeline().tick(workload=workload(rank(0, amp="fp16", step=24, scales=scales)))])[-1]
    assert "amp-overflow" not in ids(found)


def test_turing_rtx_gets_fp16_with_a_scaler_not_bf16():
    t = Timeline("rtx3090")
    turing = lambda g: replace(g, name="NVIDIA GeForce RTX 2080 Ti", compute_capability=(7, 5))  # noqa: E731
    job = workload(rank(0, pid=41000), device="cuda")
    finding = find(run(ticks(t, 12, workload=job, gpu=turing))[-1], "amp-available")
    assert "compute capability 7.5" in finding.evidence[0]
    assert "GradScaler" in finding.fix[0] and not any("bfloat16" in f or "allow_tf32" in f for f in finding.fix)


@pytest.mark.parametrize(("pages", "fires"), [(((0, 100), (1, 900)), True), (((0, 900), (1, 100)), False)])
@pytest.mark.slow  # over the fast suite's minute on two cores (--durations)
def test_focused_rank_with_its_memory_on_the_far_node(pages, fires):
    from hwtop.model.job import JobProcess, JobSnapshot

    t = Timeline("dgx-a100", topology=True)
    rank0 = JobProcess(52000, 51999, "python", "python train.py", "rank 0", 0, 1, "R", 99.0, 8 * GIB, 30,
                       tuple(range(64)), (3, 5), pages, gpus=((0, 61 * GIB),))
    job = JobSnapshot("pid 51999", (51999,), "running", (rank0,), 99.0, 8 * GIB, ((0, 61 * GIB),))
    found = run(ticks(t, 4, job=job))[-1]
    assert ("numa-misplaced" in ids(found)) is fires
    if fires:
        finding = find(found, "numa-misplaced")
        assert "rank 0 (pid 52000) keeps 90% of its resident pages off node 0 (mostly on node 1" in finding.evidence[0]


def test_training_diverged_names_the_step_and_is_critical_once_the_run_stopped():

    skipped = replace(workload(rank(0), lr=1e30), nonfinite_steps=3,
                                  last_nonfinite=NonfiniteEvent(rank=0, step=7, time=1.0, skipped=True))
    t = Timeline()
    found = find(run([t.tick(workload=skipped) for _ in range(3)])[-1], "training-diverged")
    assert found.severity == "warning" and "latest at step 7 on rank 0" in found.evidence[0]
    assert "1e+30" in found.fix[0] and found.scope == "rank 0"
    stopped = replace(skipped, last_nonfinite=replace(skipped.last_nonfinite, stopped=True))
    assert find(run([t.tick(workload=stopped)])[-1], "training-diverged").severity == "critical"
    healthy = Timeline()
    assert "training-diverged" not in ids(run([healthy.tick(workload=workload(rank(0))) for _ in range(3)])[-1])


def _spinning_job(t: Timeline, util: float, power_w: float, status: str = "running"):
    """Two ranks on GPUs 0 and 1 (400 W limit), each GPU at `util` drawing `power_w`."""
    gpus = tuple(plain_gpu(i, util, pids=(50000 + i,), power_w=power_w, power_limit_w=400.0) for i in (0, 1))
    return t.tick(2.0, gpus=gpus, workload=workload(rank(0), rank(1), status=status))


def test_gpus_busy_at_idle_power_are_ranks_waiting_in_a_collective():
    t = Timeline()
    found = run([_spinning_job(t, 100.0, 88.0) for _ in range(14)])
    assert "collective-hang" not in ids(found[8])  # 16 s of spinning: not yet
    finding = find(found[-1], "collective-hang")  # 26 s
    assert finding.title == "The job's ranks wait in a collective" and finding.gpus == (0, 1)
    assert "GPU0,1 100% busy for 20 s yet drawing 22% of their power limit" in finding.evidence[0]  # alike: once


@pytest.mark.parametrize(("util", "power_w"), [(100.0, 300.0), (80.0, 90.0)])
def test_a_gpu_that_computes_or_idles_is_no_hang(util, power_w):
    t = Timeline()
    assert all("collective-hang" not in ids(f) for f in run([_spinning_job(t, util, power_w) for _ in range(20)]))


def test_a_stalled_job_without_gpus_is_named_and_clears_when_steps_return():
    t = Timeline()
    stalled = [t.tick(2.0, workload=workload(rank(0), rank(1), status="stalled")) for _ in range(3)]
    running = [t.tick(2.0, workload=workload(rank(0), rank(1))) for _ in range(8)]
    found = run(stalled + running)
    finding = find(found[0], "collective-hang")
    assert finding.title == "The job's ranks wait in a collective" and finding.gpus == ()  # one title, spin or not
    assert "collective-hang" not in ids(found[-1])
