"""--nccl-ras-poll reaches the watch through the session's SourceConfig; and the job's GPUs spinning at idle power
(GpuSpin, with the collective-hang rule's thresholds), said beside a careful release's stop, never one alone."""

from __future__ import annotations

import pytest

from hwtop.advice.thresholds import TABLE
from hwtop.cli.main import build_parser
from hwtop.cli.nccl_ras_options import nccl_ras_config
from hwtop.model.job import JobSnapshot
from hwtop.model.snapshot import GpuSnapshot
from hwtop.probes.nccl_ras.stopped import GpuSpin


@pytest.mark.parametrize(("argv", "poll"), [
    (["doctor", "--pid", "1"], False), (["doctor", "--pid", "1", "--nccl-ras-poll"], True),
    (["--pid", "1", "--nccl-ras-poll"], True), (["export", "--pid", "1", "--nccl-ras-poll"], True),
    (["export", "--pid", "1"], False)])
def test_the_option_reaches_the_sources(argv: list[str], poll: bool) -> None:
    args = build_parser(argv).parse_args(argv)
    assert nccl_ras_config(args).poll is poll


def gpu_snapshot(index: int, **figures: float | None) -> GpuSnapshot:
    return GpuSnapshot(index, "H100", f"GPU-{index}", f"0000:{index:02x}:00.0", **figures)  # type: ignore[arg-type]


def _job(*gpus: int) -> JobSnapshot:
    return JobSnapshot("train.py", (1,), "running", (), None, 0, gpu_memory=tuple((g, 1 << 30) for g in gpus))


def _spin() -> GpuSpin:
    return GpuSpin(TABLE["spin_util_percent"].value, TABLE["spin_power_share"].value, TABLE["spin_seconds"].value)


def test_the_jobs_gpus_busy_at_idle_power_for_twenty_seconds_spin() -> None:
    spin, job = _spin(), _job(0, 1)
    polling = (gpu_snapshot(0, util_percent=100.0, power_w=90.0, power_limit_w=400.0),
               gpu_snapshot(1, util_percent=99.0, power_w=95.0, power_limit_w=400.0),
               gpu_snapshot(2, util_percent=0.0, power_w=60.0, power_limit_w=400.0))  # not the job's
    assert [spin.update(polling, job, t) for t in (0.0, 10.0, 19.0, 20.0, 30.0)] == [False, False, False, True, True]
    computing = (polling[0], gpu_snapshot(1, util_percent=99.0, power_w=330.0, power_limit_w=400.0), polling[2])
    assert spin.update(computing, job, 31.0) is False  # one GPU works: no spin, and the 20 s start again
    assert spin.update(polling, job, 40.0) is False


def test_no_reading_no_gpu_or_a_lost_one_is_no_spin() -> None:
    spin = _spin()
    unread = (gpu_snapshot(0, util_percent=None, power_w=90.0, power_limit_w=400.0),)
    assert not any(spin.update(unread, _job(0), t) for t in (0.0, 30.0))
    assert not any(spin.update((), _job(), t) for t in (0.0, 30.0))
