"""Each scripted story of a whole demo machine, played at high speed on a fake clock: the finding it is about
appears, and clears where the story fixes its cause."""

from __future__ import annotations

import pytest

from hwtop.demo.story import NCCL_HANG_S, NCCL_STUCK_RANK, STORIES
from hwtop.model.frame import Frame
from hwtop.workload.monitor import STALL_S
from tests.demo.played import EPOCH, play

pytestmark = pytest.mark.slow  # each plays a whole machine (fake NVML library and all) for 60-110 ticks: ~1 s


def ids(frame: Frame) -> set[str]:
    return {f.id for f in frame.findings}


def first_with(frames: list[Frame], rule: str) -> float | None:
    return next((f.time - EPOCH for f in frames if rule in ids(f)), None)


def test_starved_raises_gpu_starved_then_clears_once_workers_are_raised() -> None:
    frames = play("starved", 100)
    raised = first_with(frames, "gpu-starved")
    assert raised is not None and raised < 60
    assert "gpu-starved" not in ids(frames[-1])
    finding = next(f for f in frames[25].findings if f.id == "gpu-starved")
    assert any("num_workers=1" in line for line in finding.evidence)
    latest = frames[-1].snapshot
    assert latest.workload is not None and latest.workload.config is not None
    assert latest.workload.config is not None and latest.workload.config.num_workers == 12
    workers = [p for p in latest.processes if p.name == "pt_data_worker"]
    assert len(workers) >= 40  # 8 ranks x 12 workers, the busiest listed


def test_amp_raises_amp_available_then_clears_with_bf16() -> None:
    frames = play("amp", 100)
    assert first_with(frames, "amp-available") is not None
    assert "amp-available" not in ids(frames[-1])
    before, after = frames[27].snapshot, frames[-1].snapshot
    assert before.gpus[0].memory_used_bytes is not None and after.gpus[0].memory_used_bytes is not None
    assert after.gpus[0].memory_used_bytes < before.gpus[0].memory_used_bytes - 15 * 1024**3
    assert before.workload is not None and after.workload is not None
    step_before, step_after = before.workload.ranks[0].step_time_s, after.workload.ranks[0].step_time_s
    assert step_before is not None and step_after is not None and step_after < 0.6 * step_before


def test_thermal_throttles_with_temperature_then_clears_when_cooled() -> None:
    frames = play("thermal", 110)
    raised = first_with(frames, "gpu-throttled")
    assert raised is not None and 40 <= raised < 60
    hot = frames[35].snapshot.gpus[2]
    assert hot.temperature_c is not None and hot.temperature_c >= 95
    assert hot.sm_clock_mhz is not None and hot.sm_clock_max_mhz is not None
    assert hot.sm_clock_mhz < 0.85 * hot.sm_clock_max_mhz
    assert "SW thermal" in hot.throttle_reasons
    assert "gpu-throttled" not in ids(frames[-1])


def test_oom_memory_climbs_to_a_warning_then_the_rank_dies() -> None:
    frames = play("oom", 70)
    warned = next((f for f in frames if any(x.id == "cuda-oom" and x.severity == "warning" for x in f.findings)),
                  None)
    assert warned is not None and warned.time - EPOCH < 52
    memory = [f.snapshot.gpus[3].memory_used_bytes or 0 for f in frames[3:25]]
    assert memory[-1] > memory[0] + 15 * 1024**3
    last = frames[-1]
    critical = [x for x in last.findings if x.id == "cuda-oom" and x.severity == "critical"]
    assert critical and "rank 3" in critical[0].evidence[0]
    assert last.snapshot.workload is not None and last.snapshot.workload.status == "crashed"
    assert not any(41000 <= p.pid < 41008 for p in last.snapshot.processes)


def test_nccl_hang_freezes_steps_and_flattens_gpu_utilization() -> None:
    frames = play("nccl-hang", 60)
    hung = [f.snapshot for f in frames if f.time - EPOCH >= NCCL_HANG_S + STALL_S]  # stalled as the monitor says
    assert all(s.workload is not None and s.workload.status == "stalled" for s in hung)
    first, last = hung[0].workload, hung[-1].workload
    assert first is not None and last is not None
    assert [r.step for r in first.ranks] == [r.step for r in last.ranks]  # no rank completes a step
    assert {g.util_percent for s in hung for g in s.gpus} == {100.0}
    assert all(g.power_w is not None and g.power_limit_w and g.power_w < 0.3 * g.power_limit_w
               for s in hung for g in s.gpus)  # busy on paper, polling in fact
    assert not any("gpu-throttled" in ids(f) for f in frames)
    stuck = [p for p in hung[-1].processes if p.pid == 41000 + NCCL_STUCK_RANK]
    assert stuck and stuck[0].state == "R"
    assert any(p.state == "S" for p in hung[-1].processes if 41000 <= p.pid < 41008)
    raised = first_with(frames, "collective-hang")
    assert raised is not None and NCCL_HANG_S <= raised <= NCCL_HANG_S + 25  # within the spin window
    finding = next(f for f in frames[-1].findings if f.id == "collective-hang")
    assert finding.title == f"Rank {NCCL_STUCK_RANK} never reached the collective the others wait in"
    assert finding.severity == "critical"
    titles = {f.title for frame in frames for f in frame.findings if f.id == "collective-hang"}
    assert titles == {finding.title}  # one title from its raising on, in the pane as in "what changed"
    assert any(f"rank {NCCL_STUCK_RANK} (pid {41000 + NCCL_STUCK_RANK})" in line for line in finding.evidence)
    assert "collective-hang" not in ids(frames[(int(NCCL_HANG_S) - 4) // 2])  # not before the hang


@pytest.mark.parametrize("name", sorted(STORIES))
def test_a_story_is_deterministic_given_its_seed(name: str) -> None:
    def story_of(frames: list[Frame]) -> list[tuple[object, ...]]:
        # the host, the job and the GPU figures the story drives (PCIe throughput is sampled on a background
        # thread of the GPU probe, so when it lands is the scheduler's business)
        return [(s.host, s.cpu, s.memory, s.numa, s.disks, s.processes, s.workload,
                 [(g.util_percent, g.temperature_c, g.memory_used_bytes, g.sm_clock_mhz, g.processes) for g in s.gpus],
                 tuple(f.id for f in frame.findings))
                for frame in frames for s in (frame.snapshot,)]

    a, b = play(name, 6), play(name, 6)
    assert story_of(a) == story_of(b)
    assert story_of(a) != story_of(play(name, 6, seed=8))
