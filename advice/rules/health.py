"""gpu-throttled and gpu-errors: the card itself slows down or fails."""

from __future__ import annotations

from collections.abc import Iterator

from hwtop.advice.registry import rule
from hwtop.advice.thresholds import Threshold, Thresholds
from hwtop.advice.throttle import HARDWARE, POWER, THERMAL
from hwtop.advice.window import Window, compute_pids
from hwtop.model.finding import Finding
from hwtop.model.snapshot import GpuSnapshot


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


def _xid_finding(gpu: GpuSnapshot) -> Finding:
    xid = gpu.xid_last or 0
    meaning, hardware = XID_MEANING.get(xid, ("see NVIDIA's Xid table for this code", True))
    return gpu_errors.finding(
        "critical" if hardware else "warning", f"GPU{gpu.index} reported Xid {xid}",
        (f"GPU{gpu.index} ({gpu.pci_bus_id or 'bus id unknown'}): Xid {xid}, {meaning} (NVML event, "
         "within the last two minutes)",),
        ECC_FIXES if hardware else PROGRAM_XID_FIXES, scope=f"GPU{gpu.index}", gpus=(gpu.index,),
        pids=compute_pids(gpu),
        # a program's fault on eight GPUs is one bug; a card's own error is that card's
        cause="" if hardware else f"Xid {xid}")


@rule("gpu-errors", severity="critical", hold_s=0, clear_s=60, order=130, watches="ECC errors and lost GPUs",
      thresholds={"ecc_corrected_growth": Threshold(
          100, "errors", "hwtop's choice: 100 more corrected errors within two minutes is a burst; NVML here gives "
                         "totals, not addresses")})
def gpu_errors(window: Window, t: Thresholds) -> Iterator[Finding]:
    first = {g.index: g for g in window.snapshots[0].gpus}
    for gpu in window.latest.gpus:
        before = first.get(gpu.index)
        if gpu.xid_last and (before is None or before.xid_last != gpu.xid_last):  # reported within the window
            yield _xid_finding(gpu)
            continue
        if gpu.lost:
            yield gpu_errors.finding(
                "critical", f"GPU{gpu.index} lost",
                (f"GPU{gpu.index} ({gpu.pci_bus_id or 'bus id unknown'}) stopped answering NVML "
                 "(GPU_IS_LOST); hwtop retries it every 5 s",),
                ("Check dmesg for Xid 79 (fell off the bus): power, seating, or an overheated card.",
                 "Jobs on it are dead or hung: stop them; the node usually needs a reboot."),
                scope=f"GPU{gpu.index}", gpus=(gpu.index,))
            continue
        ecc = gpu.ecc
        if ecc is None:
            continue
        if ecc.volatile_uncorrected:
            yield gpu_errors.finding(
                "critical", f"GPU{gpu.index} uncorrectable ECC errors",
                (f"GPU{gpu.index} {ecc.volatile_uncorrected} uncorrectable ECC error(s) since the last "
                 "driver load",), ECC_FIXES, scope=f"GPU{gpu.index}", gpus=(gpu.index,))
            continue
        start = before.ecc.volatile_corrected if before is not None and before.ecc is not None else None
        if start is not None and ecc.volatile_corrected is not None and \
                ecc.volatile_corrected - start >= t["ecc_corrected_growth"]:
            span = window.latest.time - window.snapshots[0].time
            yield gpu_errors.finding(
                "warning", f"GPU{gpu.index} corrected ECC errors climbing",
                (f"GPU{gpu.index} corrected ECC errors {start} → {ecc.volatile_corrected} in {span:.0f} s",),
                ECC_FIXES, scope=f"GPU{gpu.index}", gpus=(gpu.index,))
