"""GPU faults on a demo machine's timeline (`--demo dgx-a100:gpu-faults`), so the gpu-errors rule, the GPU panel's
marks and the exporter's series (and the alerts over them) can be seen: a row remap recorded and pending a reset, a
remap that fails, NVLink replays climbing. Each lands on the GPU named, or the machine's last where it has fewer."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from hwtop.demo.nvml.library import FakeNvmlLibrary

PENDING_GPU, PENDING_AT_S = 2, 5.0  # an uncorrectable error: a row remap recorded (Xid 63), applied at a reset
FAILED_GPU, FAILED_AT_S = 6, 20.0  # no spare row left in a bank: the remap fails (Xid 64)
NVLINK_GPU, NVLINK_LINK, NVLINK_FROM_S = 3, 4, 10.0  # a marginal link: replays and the CRC errors they correct
NVLINK_EVERY_S, NVLINK_UNTIL_S = 2.0, 900.0
HISTORY_GPU = 5  # rows remapped long ago after correctable errors: counted, not a fault
DESCRIPTION = (f"GPU {PENDING_GPU} records a row remap at {PENDING_AT_S:g} s (pending a reset), GPU {FAILED_GPU}'s "
               f"remapping fails at {FAILED_AT_S:g} s, GPU {NVLINK_GPU}'s NVLink {NVLINK_LINK} replays from "
               f"{NVLINK_FROM_S:g} s")


def gpu_faults(library: FakeNvmlLibrary) -> None:
    """Schedules the faults on the library's timeline."""
    last = library.profile.gpu_count - 1
    pending, failed, history = min(PENDING_GPU, last), min(FAILED_GPU, last), min(HISTORY_GPU, last)
    library.set_row_remap(history, correctable=2)

    def record(lib: FakeNvmlLibrary) -> None:
        lib.set_row_remap(pending, uncorrectable=1, pending=True)
        lib.report_xid(pending, 63)

    def fail(lib: FakeNvmlLibrary) -> None:
        lib.set_row_remap(failed, uncorrectable=8, failed=True)
        lib.report_xid(failed, 64)

    library.at(PENDING_AT_S, record)
    library.at(FAILED_AT_S, fail)
    if library.profile.gpu.nvlinks > NVLINK_LINK:
        gpu = min(NVLINK_GPU, last)
        steps = int((NVLINK_UNTIL_S - NVLINK_FROM_S) / NVLINK_EVERY_S)
        for step in range(steps):
            library.at(NVLINK_FROM_S + step * NVLINK_EVERY_S, lambda lib: _replay(lib, gpu))


def _replay(library: FakeNvmlLibrary, gpu: int) -> None:
    library.add_nvlink_errors(gpu, NVLINK_LINK, "replay", 1)
    library.add_nvlink_errors(gpu, NVLINK_LINK, "crc_flit", 3)
