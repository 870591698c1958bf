"""gpu-throttled and gpu-errors: the card itself slows down or fails."""

from __future__ import annotations

from collections.abc import Iterator

from hwtop.advice.registry import rule
from hwtop.advice.thresholds import Threshold, Thresholds
from hwtop.advice.throttle import HARDWARE, POWER, THERMAL
from hwtop.advice.window import Window, compute_pids
from hwtop.model.finding import Finding
from hwtop.model.snapshot import GpuSnapshot, RowRemap


@rule("gpu-throttled", hold_s=5, clear_s=10, order=90, watches="clock event reasons of busy GPUs",
      reads=("gpu_busy_util_percent",))
def gpu_throttled(window: Window, t: Thresholds) -> Iterator[Finding]:
    for gpu in window.latest.gpus:
        reasons = set(gpu.throttle_reasons) & (THERMAL | POWER | HARDWARE)
        util = window.gpu_mean(gpu.index, lambda g: g.util_percent, 5.0)
        if gpu.lost or not reasons or util is None or util < t["gpu_busy_util_percent"]:
            continue
        clocks = "N/A" if gpu.sm_clock_mhz is None else f"{gpu.sm_clock_mhz:.0f}"
        if gpu.sm_clock_max_mhz:
            clocks += f" of {gpu.sm_clock_max_mhz:.0f}"
        evidence = [f"GPU{gpu.index} clocks held back by {', '.join(sorted(reasons))} while {util:.0f}% busy",
                    f"SM clock {clocks} MHz"]
        if gpu.temperature_c is not None:
            evidence.append(f"temperature {gpu.temperature_c:.0f} °C")
        if gpu.power_w is not None and gpu.power_limit_w:
            evidence.append(f"power {gpu.power_w:.0f} W of a {gpu.power_limit_w:.0f} W limit")
        fixes = []
        if reasons & THERMAL:
            fixes.append("Cooling: airflow through the chassis, fan curve, room temperature, dust; "
                         "nvidia-smi -q -d TEMPERATURE shows the slowdown thresholds.")
        if reasons & HARDWARE:
            fixes.append("Power delivery: PSU rating and the card's power cables; HW slowdown also follows an "
                         "external power-brake signal (nvidia-smi -q -d PERFORMANCE).")
        if reasons & POWER:
            fixes.append("At its power limit: normal under full load. If the limit was lowered, nvidia-smi -q -d "
                         "POWER shows default against current; raising it is the administrator's call.")
        severity = "warning" if reasons & (THERMAL | HARDWARE) else "info"
        # GPUs held back for the same reasons are one cause; heat on one and a power cap on another are two.
        cause = ", ".join(name for name, kinds in (("thermal", THERMAL), ("hardware", HARDWARE), ("power cap", POWER))
                          if reasons & kinds)
        held_back = None
        if gpu.sm_clock_mhz is not None and gpu.sm_clock_max_mhz:
            held_back = 100.0 * (1.0 - gpu.sm_clock_mhz / gpu.sm_clock_max_mhz)
        yield gpu_throttled.finding(severity, f"GPU{gpu.index} clocks throttled", tuple(evidence), tuple(fixes),
                                    scope=f"GPU{gpu.index}", gpus=(gpu.index,), cause=cause, measure=held_back)


ECC_FIXES = ("nvidia-smi -q -d ECC,PAGE_RETIREMENT,ROW_REMAPPER shows the counts and retired/remapped rows.",
             "dmesg | grep -i xid: Xid 48/63/64/94/95 are memory errors, 79 is a GPU that fell off the bus.",
             "Drain the node; once no process uses the GPU a reset (or reboot) clears a pending remap; RMA the "
             "card if uncorrectable errors return.")


# What the common XIDs mean (NVIDIA's "Xid Errors" table): the driver's report, and whether the card or the
# program is at fault.
XID_MEANING: dict[int, tuple[str, bool]] = {  # xid -> (meaning, hardware)
    13: ("graphics engine exception: often a program's out-of-range access", False),
    31: ("GPU memory page fault: often a program's illegal address", False),
    43: ("GPU stopped processing: a program's fault or a hang", False),
    45: ("preemptive cleanup: a process on the GPU was killed", False),
    48: ("double-bit ECC error", True),
    63: ("ECC page retirement or row remap recorded", True),
    64: ("ECC page retirement or row remap failed", True),
    74: ("NVLink error", True),
    79: ("GPU has fallen off the bus", True),
    92: ("high single-bit ECC error rate", True),
    94: ("contained ECC error: the affected program was stopped", True),
    95: ("uncontained ECC error: every program on the GPU is affected", True),
    119: ("GSP RPC timeout", True),
    120: ("GSP error", True),
}
PROGRAM_XID_FIXES = ("The program's own error: its stderr names the kernel; CUDA_LAUNCH_BLOCKING=1 makes the "
                     "failing call raise where it is made, and compute-sanitizer finds the bad access.",
                     "dmesg | grep -i xid shows the report with the process it hit.")


def _bus(gpu: GpuSnapshot) -> str:
    return gpu.pci_bus_id or "bus id unknown"


def _xid_finding(gpu: GpuSnapshot) -> Finding:
    xid = gpu.xid_last or 0
    meaning, hardware = XID_MEANING.get(xid, ("see NVIDIA's Xid table for this code", True))
    evidence = [f"GPU{gpu.index} ({_bus(gpu)}): Xid {xid}, {meaning} (NVML event, within the last two minutes)"]
    if gpu.row_remap is not None and gpu.row_remap.pending:
        evidence.append(f"GPU{gpu.index}'s row remapper has a remap pending: it takes effect at the next GPU reset")
    return gpu_errors.finding(
        "critical" if hardware else "warning", f"GPU{gpu.index} reported Xid {xid}", tuple(evidence),
        ECC_FIXES if hardware else PROGRAM_XID_FIXES, scope=f"GPU{gpu.index}", gpus=(gpu.index,),
        pids=compute_pids(gpu),
        # a program's fault on eight GPUs is one bug; a card's own error is that card's
        cause="" if hardware else f"Xid {xid}")


def _rows(remap: RowRemap) -> str:
    return (f"{remap.uncorrectable_rows} row(s) remapped after uncorrectable errors, {remap.correctable_rows} after "
            "correctable ones")


def _remap_failed(gpu: GpuSnapshot, remap: RowRemap) -> Finding:
    return gpu_errors.finding(
        "critical", f"GPU{gpu.index} row remapping failed",
        (f"GPU{gpu.index} ({_bus(gpu)}): a failing row of its memory could not be remapped: no spare row was left "
         f"({_rows(remap)}; NVML row remapper)",),
        (f"Drain the node: stop the jobs on GPU{gpu.index}, then reset it (nvidia-smi -r -i {gpu.index}) or reboot; "
         "RMA the card if remapping fails again.",
         "nvidia-smi -q -d ROW_REMAPPER shows the remapper's state and the spare rows left per bank."),
        scope=f"GPU{gpu.index}", gpus=(gpu.index,), pids=compute_pids(gpu))


REMAP_RECORDED = 63  # the Xid that reports a remap recorded: the remapper's own state says the rest


def _remap_pending(gpu: GpuSnapshot, remap: RowRemap, new_xid: bool = False) -> Finding:
    """A warning however it was learned: the Xid 63 that recorded the remap (`new_xid`: within the window) is a line
    of its evidence, so one remap reads the same while that Xid is in the window and after."""
    recorded = (f"Xid {REMAP_RECORDED} recorded it (NVML event, within the last two minutes)",) if new_xid else ()
    return gpu_errors.finding(
        "warning", f"GPU{gpu.index} row remap pending: reset needed",
        (f"GPU{gpu.index} ({_bus(gpu)}): a failing row of its memory is remapped to a spare one at the next GPU "
         f"reset ({_rows(remap)}; NVML row remapper)", *recorded),
        (f"Reset the GPU when the job allows: once no process uses GPU{gpu.index}, nvidia-smi -r -i {gpu.index} "
         "(or reboot the node); the remap takes effect then.",
         "nvidia-smi -q -d ROW_REMAPPER shows the pending remap; dmesg | grep -i xid the Xid 63 that recorded it."),
        scope=f"GPU{gpu.index}", gpus=(gpu.index,), pids=compute_pids(gpu))


NVLINK_WORDS = (("replay", "replays"), ("recovery", "recoveries"), ("crc_data", "data CRC errors"),
                ("crc_flit", "flow-control CRC errors"))


def _nvlink_growth(gpu: GpuSnapshot, before: GpuSnapshot | None) -> dict[str, int]:
    """Each NVLink counter's growth since `before` (a counter that went back, reset by the driver, grew 0)."""
    now, then = gpu.nvlink_errors, before.nvlink_errors if before is not None else None
    if now is None or then is None:
        return {}
    grown = {}
    for name, _ in NVLINK_WORDS:
        late, early = getattr(now, name), getattr(then, name)
        if late is not None and early is not None and late > early:
            grown[name] = late - early
    return grown


def _nvlink_climbing(gpu: GpuSnapshot, before: GpuSnapshot | None, span: float, t: Thresholds) -> Finding | None:
    """Replays, recoveries or data CRC errors, any at all (DCGM's health watch warns at one); flow-control CRC
    errors, which a replay corrects, only at DCGM's rate (DCGM_LIMIT_MAX_NVLINK_CRC_ERROR)."""
    grown = _nvlink_growth(gpu, before)
    flit_rate = grown.get("crc_flit", 0) / span if span > 0 else 0.0
    if not any(grown.get(name, 0) >= t["nvlink_error_growth"] for name in ("replay", "recovery", "crc_data")) \
            and flit_rate < t["nvlink_crc_flit_per_s"]:
        return None
    counts = ", ".join(f"{words} +{grown[name]}" for name, words in NVLINK_WORDS if grown.get(name))
    return gpu_errors.finding(
        "warning", f"GPU{gpu.index} NVLink errors climbing",
        (f"GPU{gpu.index} ({_bus(gpu)}) NVLink errors in {span:.0f} s: {counts}",),
        (f"nvidia-smi nvlink -e -i {gpu.index} shows the counts per link, nvidia-smi nvlink -s -i {gpu.index} each "
         "link's state: a link that keeps replaying or retraining slows every collective over it.",
         "dcgmi diag -r 2 tests the links; a link that keeps failing is the GPU board's or the NVSwitch tray's to "
         "reseat or replace."),
        scope=f"GPU{gpu.index}", gpus=(gpu.index,), pids=compute_pids(gpu))


def _ecc_finding(gpu: GpuSnapshot, before: GpuSnapshot | None, span: float, t: Thresholds) -> Finding | None:
    ecc = gpu.ecc
    if ecc is None:
        return None
    if ecc.volatile_uncorrected:
        return gpu_errors.finding(
            "critical", f"GPU{gpu.index} uncorrectable ECC errors",
            (f"GPU{gpu.index} {ecc.volatile_uncorrected} uncorrectable ECC error(s) since the last driver load",),
            ECC_FIXES, scope=f"GPU{gpu.index}", gpus=(gpu.index,))
    start = before.ecc.volatile_corrected if before is not None and before.ecc is not None else None
    if start is not None and ecc.volatile_corrected is not None and \
            ecc.volatile_corrected - start >= t["ecc_corrected_growth"]:
        return gpu_errors.finding(
            "warning", f"GPU{gpu.index} corrected ECC errors climbing",
            (f"GPU{gpu.index} corrected ECC errors {start} → {ecc.volatile_corrected} in {span:.0f} s",),
            ECC_FIXES, scope=f"GPU{gpu.index}", gpus=(gpu.index,))
    return None


def _gpu_fault(gpu: GpuSnapshot, before: GpuSnapshot | None, span: float, t: Thresholds) -> Finding | None:
    """The worst of a GPU's faults, one finding a GPU: a failed remap, a new Xid, the GPU lost, uncorrectable ECC
    errors, a remap pending a reset, NVLink errors climbing, corrected ECC errors climbing."""
    remap = gpu.row_remap
    if remap is not None and remap.failed:
        return _remap_failed(gpu, remap)
    new_xid = bool(gpu.xid_last) and (before is None or before.xid_last != gpu.xid_last)  # within the window
    if remap is not None and remap.pending and new_xid and gpu.xid_last == REMAP_RECORDED:
        return _remap_pending(gpu, remap, new_xid)
    if new_xid:
        return _xid_finding(gpu)
    if gpu.lost:
        return gpu_errors.finding(
            "critical", f"GPU{gpu.index} lost",
            (f"GPU{gpu.index} ({_bus(gpu)}) stopped answering NVML (GPU_IS_LOST); hwtop retries it every 5 s",),
            ("Check dmesg for Xid 79 (fell off the bus): power, seating, or an overheated card.",
             "Jobs on it are dead or hung: stop them; the node usually needs a reboot."),
            scope=f"GPU{gpu.index}", gpus=(gpu.index,))
    if gpu.ecc is not None and gpu.ecc.volatile_uncorrected:
        return _ecc_finding(gpu, before, span, t)
    if remap is not None and remap.pending:
        return _remap_pending(gpu, remap)
    return _nvlink_climbing(gpu, before, span, t) or _ecc_finding(gpu, before, span, t)


@rule("gpu-errors", severity="critical", hold_s=0, clear_s=60, order=130,
      watches="Xid errors, ECC errors, row remapping, NVLink errors and lost GPUs",
      thresholds={
          "ecc_corrected_growth": Threshold(
              100, "errors", "hwtop's choice: 100 more corrected errors within two minutes is a burst; NVML here "
                             "gives totals, not addresses"),
          "nvlink_error_growth": Threshold(
              1, "errors", "DCGM's health watch (DCGM_LIMIT_MAX_NVLINK_ERROR): one NVLink replay, recovery or data "
                           "CRC error within its window is a warning"),
          "nvlink_crc_flit_per_s": Threshold(
              100, "errors/s", "DCGM's health watch (DCGM_LIMIT_MAX_NVLINK_CRC_ERROR): flow-control CRC errors, "
                               "which a replay corrects, fail a link from 100 a second")})
def gpu_errors(window: Window, t: Thresholds) -> Iterator[Finding]:
    first = {g.index: g for g in window.snapshots[0].gpus}
    span = window.latest.time - window.snapshots[0].time
    for gpu in window.latest.gpus:
        finding = _gpu_fault(gpu, first.get(gpu.index), span, t)
        if finding is not None:
            yield finding
