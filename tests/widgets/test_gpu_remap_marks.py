"""A GPU whose row remap failed or waits for a reset is marked where its figures are drawn, in every layout of the
GPU panel, and takes no row more: at 80x24 the summary line names the GPUs before its figures."""

from __future__ import annotations

import msgspec

from hwtop.model.history import Recent
from hwtop.model.snapshot import GpuSnapshot, RowRemap
from hwtop.tui.app import HwtopApp
from hwtop.widgets import palette
from hwtop.widgets.gpu import GpuPanel
from tests.factories import ScriptedSource, host_snapshot
from tests.small_screen import screen_lines

HEALTHY = RowRemap(2, 0, False, False)


def _gpus(faults: dict[int, RowRemap]) -> tuple[GpuSnapshot, ...]:
    return tuple(GpuSnapshot(i, "NVIDIA A100-SXM4-80GB", f"GPU-{i}", f"0000:{i:02x}:00.0", memory_total_bytes=80 << 30,
                             memory_used_bytes=61 << 30, util_percent=90.0, temperature_c=70.0, power_w=300.0,
                             power_limit_w=400.0, row_remap=faults.get(i, HEALTHY)) for i in range(8))


FAULTY = _gpus({2: RowRemap(0, 1, True, False), 6: RowRemap(0, 8, False, True)})


def _styled(lines, needle: str) -> str:  # noqa: ANN001 - rich Text lines
    for line in lines:
        at = line.plain.find(needle)
        if at >= 0:
            return [str(span.style) for span in line.spans if span.start <= at < span.end][-1]  # drawn last
    raise AssertionError(f"{needle!r} not drawn in {[line.plain for line in lines]}")


def test_each_layout_marks_the_failed_remap_red_and_the_pending_one_yellow() -> None:
    panel = GpuPanel()
    for rows, width, mode, failed, pending in ((24, 200, "wide", " REMAP FAILED", "RESET: remap pending"),
                                               (8, 120, "dense", " REMAP FAILED", "RESET: remap pending"),
                                               (4, 140, "cells", "!", "!")):
        panel.show(None, FAULTY, Recent(), max_lines=rows, width=width)
        lines = panel.lines(width)
        assert panel.mode == mode
        six = next(line for line in lines if "GPU6" in line.plain)
        two = next(line for line in lines if "GPU2" in line.plain)
        assert _styled([six[six.plain.index("GPU6"):]], failed) == palette.CRIT_STRONG, mode
        assert _styled([two[two.plain.index("GPU2"):]], pending) == palette.WARN_STRONG, mode
        healthy = [line.plain for line in lines if "GPU6" not in line.plain and "GPU2" not in line.plain]
        assert not [line for line in healthy if "REMAP" in line or "remap" in line or "!" in line], mode
    panel.show(None, FAULTY, Recent(), max_lines=1, width=80)
    summary = panel.lines(80)[0]
    assert summary.plain.startswith("8× A100-SXM4-80GB REMAP GPU2,6 util")
    assert _styled([summary], "REMAP GPU2,6") == palette.CRIT_STRONG  # one failed: red


async def test_at_80x24_the_marks_take_no_row_more() -> None:
    async def gpu_rows(gpus: tuple[GpuSnapshot, ...]) -> list[str]:
        app = HwtopApp(ScriptedSource([msgspec.structs.replace(host_snapshot(), gpus=gpus)]))
        async with app.run_test(size=(80, 24)) as pilot:
            await app.first_frame.wait()
            await pilot.pause()
            return [line for line in screen_lines(app) if line.startswith("│ GPU") or "A100" in line]

    faulty, healthy = await gpu_rows(FAULTY), await gpu_rows(_gpus({}))
    assert len(faulty) == len(healthy) > 0
    assert any("GPU6!" in line for line in faulty) and any("GPU2!" in line for line in faulty)
    assert not any("!" in line for line in healthy)
