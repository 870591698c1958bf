"""Run on a machine with a real NVIDIA GPU (the `device` tool's H200): reads the same fields through the hwtop
NVML probe and through `nvidia-smi --query-gpu`, and writes both to tests/fixtures/nvml_conformance.json.
It only reads; it changes no setting of the card.

    python tests/gpu/record_conformance.py [OUT.json]

tests/probes/test_gpu_conformance.py then checks the probe's figures against nvidia-smi's from that capture.
"""

from __future__ import annotations

import dataclasses
import json
import os
import platform
import subprocess
import sys
import time

from hwtop.probes.gpu import NvmlProbe

QUERY = ("index,name,uuid,pci.bus_id,memory.total,memory.used,utilization.gpu,temperature.gpu,power.draw,"
         "enforced.power.limit,clocks.sm,clocks.max.sm,clocks.mem,pcie.link.gen.current,pcie.link.width.current,"
         "pcie.link.gen.max,pcie.link.width.max,compute_cap,driver_version")


def nvidia_smi() -> list[dict[str, str]]:
    out = subprocess.run(["nvidia-smi", f"--query-gpu={QUERY}", "--format=csv,noheader,nounits"],
                         capture_output=True, text=True, check=True).stdout
    keys = QUERY.split(",")
    return [dict(zip(keys, (v.strip() for v in line.split(",")), strict=True)) for line in out.strip().splitlines()]


def main() -> None:
    out_path = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "fixtures",
                                                                   "nvml_conformance.json")
    probe = NvmlProbe()
    probe.read()
    time.sleep(1.0)
    probe.calls.clear()
    started = time.perf_counter()
    system, gpus = probe.read()
    tick_ms = (time.perf_counter() - started) * 1000
    smi = nvidia_smi()
    probe.close()
    capture = {
        "host": platform.node(), "time": time.time(), "tick_ms": tick_ms, "calls": dict(probe.calls),
        "system": dataclasses.asdict(system),
        "probe": [dataclasses.asdict(g) for g in gpus],
        "nvidia_smi": smi,
    }
    with open(out_path, "w") as handle:
        json.dump(capture, handle, indent=2, default=str)
    print(f"wrote {out_path}: {len(gpus)} GPU(s), one tick {tick_ms:.2f} ms, {sum(probe.calls.values())} calls")


if __name__ == "__main__":
    main()
