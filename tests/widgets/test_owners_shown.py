"""Whose a process and a GPU are, as a user reads them: the process table's OWNER column (absent where no process
has an owner), `/` by owner, each GPU's block and the GPUs' summary line naming the job, hostile names as text."""

from __future__ import annotations

import msgspec
import pytest

from hwtop.model.owner import Owner
from hwtop.model.snapshot import GpuProcess, GpuSnapshot, ProcessInfo, Snapshot
from hwtop.tui.app import HwtopApp
from hwtop.widgets.gpu import gpu_numbers, owner_spans
from hwtop.widgets.processes import filter_rows, merge_rows
from tests.factories import ScriptedSource, host_snapshot
from tests.small_screen import screen_lines

ALICE = Owner("slurm", job_id="4242", step="0", user="alice", job_name="llama")
BOB = Owner("slurm", job_id="5151", step="0", user="bob")
POD = Owner("pod", pod_uid="6b0a2f4e-1c3d-4e5f-8a9b-0c1d2e3f4a5b", pod="bert-7f9", namespace="research")
HOSTILE = Owner("pod", pod_uid="6b0a2f4e", pod="\x1b[31m[bold]evil[/]", namespace="n\ns")


def _processes() -> tuple[ProcessInfo, ...]:
    return (
        ProcessInfo(41000, 40990, "alice", "python", "python train.py", "R", 99.0, 1 << 30, 20, None, owner=ALICE),
        ProcessInfo(41004, 40991, "bob", "python", "python pretrain.py", "R", 98.0, 1 << 30, 20, None, owner=BOB),
        ProcessInfo(5000, 1, "1000", "python", "python serve.py", "S", 5.0, 1 << 28, 4, None, owner=POD),
        ProcessInfo(812, 1, "root", "sshd", "sshd: alice [priv]", "S", 0.3, 1 << 20, 1, None),
    )


def _gpus() -> tuple[GpuSnapshot, ...]:
    def gpu(index: int, owner: Owner, pid: int) -> GpuSnapshot:
        return GpuSnapshot(index, "NVIDIA A100-SXM4-80GB", f"GPU-{index}", f"0000:{index:02x}:00.0",
                           memory_total_bytes=80 << 30, memory_used_bytes=20 << 30, util_percent=90.0,
                           processes=(GpuProcess(pid, "compute", 20 << 30, owner=owner),))
    return tuple(gpu(i, ALICE if i < 4 else BOB, 41000 + i) for i in range(8))


async def shown(snapshot: Snapshot, size: tuple[int, int]) -> list[str]:
    """The screen a user sees of `snapshot` at `size`, once its first frame is drawn."""
    app = HwtopApp(ScriptedSource([snapshot]))
    async with app.run_test(size=size) as pilot:
        await app.first_frame.wait()
        await pilot.pause()
        return screen_lines(app)


def test_rows_carry_owner_labels_and_filter_by_them() -> None:
    rows = merge_rows(_processes(), ())
    assert {r.pid: r.owner for r in rows} == {41000: "job 4242", 41004: "job 5151", 5000: "research/bert-7f9",
                                              812: ""}
    assert [r.pid for r in filter_rows(rows, "job 4242")] == [41000]
    assert [r.pid for r in filter_rows(rows, "RESEARCH/")] == [5000]
    assert [r.pid for r in filter_rows(rows, "5151")] == [41004]


def test_a_gpu_process_outside_the_table_keeps_its_owner() -> None:
    rows = merge_rows((), _gpus()[:1])
    assert rows[0].owner == "job 4242"


def test_owner_spans_and_gpu_numbers() -> None:
    spans = owner_spans(_gpus())
    assert [(o.job_id, i) for o, i in spans] == [("4242", [0, 1, 2, 3]), ("5151", [4, 5, 6, 7])]
    assert gpu_numbers([0, 1, 2, 3]) == "0-3" and gpu_numbers([0, 2, 5]) == "0,2,5" and gpu_numbers([4]) == "4"


async def test_owner_column_shown_only_when_someone_owns_a_process() -> None:
    assert not any("OWNER" in line for line in await shown(host_snapshot(), (100, 30)))
    lines = await shown(msgspec.structs.replace(host_snapshot(), processes=_processes()), (100, 30))
    assert any("OWNER" in line for line in lines)
    assert any("41000" in line and "job 4242" in line for line in lines)
    assert any("5000" in line and "research/bert-7…" in line for line in lines)  # cut to the column


@pytest.mark.slow  # over the fast suite's minute on two cores (--durations)
async def test_gpus_say_whose_they_are_at_80x24_and_200x60() -> None:
    snapshot = msgspec.structs.replace(host_snapshot(), processes=_processes(), gpus=_gpus())
    for size, wanted in (((80, 24), ("job 4242", "job 5151")), ((200, 60), ("job 4242 (alice)", "job 5151 (bob)"))):
        gpu_lines = [line for line in await shown(snapshot, size) if "GPU" in line and "job" in line]
        for owner in wanted:
            assert any(owner in line for line in gpu_lines), (size, owner, gpu_lines)


async def test_hostile_owner_names_are_shown_as_text() -> None:
    hostile = (ProcessInfo(7, 1, "eve", "python", "python x.py", "R", 50.0, 1 << 20, 1, None, owner=HOSTILE),)
    text = "\n".join(await shown(msgspec.structs.replace(host_snapshot(), processes=hostile), (120, 30)))
    assert "n␊s/␛[31m[bold]…" in text  # control characters visible, markup literal, cut to the column
    assert "\x1b" not in text


async def test_at_80_columns_the_owner_gives_way_to_the_command() -> None:
    lines = await shown(msgspec.structs.replace(host_snapshot(), processes=_processes()), (80, 24))
    assert any("41000" in line and "job 4242" in line and "python train" in line for line in lines)
    assert any("5000" in line and "bert-7f9" in line for line in lines)  # the pod's name alone
