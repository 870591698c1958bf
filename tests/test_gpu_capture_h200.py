"""A real GPU machine's capture (scripts/capture-gpu.sh on a lent H200, driver 580.159.04, 2026-12-04), kept in
tests/fixtures/gpu-capture/h200-r580: what hwtop read there against what nvidia-smi printed there, and the
library fake (under the real, pinned nvidia-ml-py) against the real driver's answers to the same calls."""

from __future__ import annotations

import csv
import json
import math
import statistics
import xml.etree.ElementTree as ET
from collections import defaultdict
from pathlib import Path

import pytest

from hwtop.cli.capture import capture
from hwtop.demo.nvml import abi

CAPTURE = Path(__file__).parent / "fixtures" / "gpu-capture" / "h200-r580"
MIB = 1 << 20


def jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def outcomes(path: Path) -> dict[str, set[str]]:
    """NVML function -> how it answered over a phase ('ok' or the bindings' exception name)."""
    seen: dict[str, set[str]] = defaultdict(set)
    for call in jsonl(path)[1:]:
        seen[call["call"]].add(call["error"]["type"] if "error" in call else "ok")
    return dict(seen)


@pytest.fixture(scope="module")
def smi() -> ET.Element:
    gpu = ET.parse(CAPTURE / "nvidia-smi-q.xml").getroot().find("gpu")
    assert gpu is not None
    return gpu


def mib(text: str | None) -> int:
    assert text is not None and text.endswith(" MiB")
    return int(text.removesuffix(" MiB"))


def test_what_hwtop_read_on_the_h200_is_what_nvidia_smi_printed(smi: ET.Element) -> None:
    gpu = jsonl(CAPTURE / "gpus-idle.jsonl")[0]["gpus"][0]
    query = next(csv.DictReader((CAPTURE / "query-gpu.csv").open(), skipinitialspace=True))
    assert gpu["name"] == smi.findtext("product_name") == query["name"] == "NVIDIA H200"
    assert gpu["uuid"] == smi.findtext("uuid") and gpu["pci_bus_id"] == smi.findtext("pci/pci_bus_id")
    assert gpu["memory_total_bytes"] / MIB == mib(smi.findtext("fb_memory_usage/total")) == 143771
    # nvidia-smi rounds reserved memory up to whole MiB (615.06 -> 616) and used/free to the nearest
    assert math.ceil(gpu["memory_reserved_bytes"] / MIB) == mib(smi.findtext("fb_memory_usage/reserved")) == 616
    assert round(gpu["memory_used_bytes"] / MIB) == mib(smi.findtext("fb_memory_usage/used")) == 0
    assert round(gpu["memory_free_bytes"] / MIB) == mib(smi.findtext("fb_memory_usage/free")) == 143156
    assert gpu["power_limit_w"] == float(query["enforced.power.limit [W]"].removesuffix(" W")) == 700.0
    assert (gpu["sm_clock_max_mhz"], gpu["mem_clock_max_mhz"]) == (1980, 3201)
    assert smi.findtext("max_clocks/sm_clock") == "1980 MHz" and smi.findtext("max_clocks/mem_clock") == "3201 MHz"
    assert gpu["sm_clock_mhz"] == 345 and smi.findtext("clocks/sm_clock") == "345 MHz"  # idle
    link = gpu["pcie"]
    assert (link["gen"], link["width"], link["max_gen"], link["max_width"]) == (5, 16, 5, 16)
    assert smi.findtext("pci/pci_gpu_link_info/pcie_gen/current_link_gen") == "5"
    assert smi.findtext("pci/pci_gpu_link_info/link_widths/current_link_width") == "16x"
    assert gpu["pcie_replays"] == int(smi.findtext("pci/replay_counter") or -1)
    assert gpu["ecc_enabled"] and smi.findtext("ecc_mode/current_ecc") == "Enabled"
    assert not gpu["mig_enabled"] and smi.findtext("mig_mode/current_mig") == "Disabled"
    assert gpu["fan_percent"] is None and smi.findtext("fan_speed") == "N/A"
    assert gpu["pstate"] == 0 and smi.findtext("performance_state") == "P0"
    assert tuple(gpu["compute_capability"]) == (9, 0) and query["compute_cap"] == "9.0"
    assert abs(gpu["temperature_c"] - int((smi.findtext("temperature/gpu_temp") or "").removesuffix(" C"))) <= 3


def test_the_real_driver_counts_pcie_bytes_in_32_bits_and_hwtop_unwraps_them() -> None:
    """R580 answers fields 197/198 as unsigned int, wrapping every 4 GiB. Under host-to-device copies at about
    55 GB/s (scripts/h2d_load.py; its own figures are in load.head.log) the counter wraps a dozen times between
    two reads, and hwtop, unwrapping with the 20-ms throughput sample, reports the copies' rate: 7-10 % above
    the payload, which is what the link carries besides (packet headers, the job's own traffic)."""
    fields = [c for c in jsonl(CAPTURE / "nvml-calls-load.jsonl")[1:] if c["call"] == "nvmlDeviceGetFieldValues"]
    assert fields and all(c["args"][1] == [[abi.FI_PCIE_COUNT_TX_BYTES, 0], [abi.FI_PCIE_COUNT_RX_BYTES, 0]]
                          for c in fields)
    assert {r["valueType"] for c in fields for r in c["result"]} == {abi.VALUE_UINT}
    copies = [float(line.split()[2]) * 1e9 for line in (CAPTURE / "load.head.log").read_text().splitlines()
              if line.startswith("h2d:")]
    reported = [g["gpus"][0]["pcie"]["rx_bytes_per_s"] for g in jsonl(CAPTURE / "gpus-load.jsonl")[1:]]
    assert len(copies) >= 5 and len(reported) >= 5
    assert min(reported) > 10 * 2**32  # more than ten wraps a second, none lost
    assert all(1.0 < rate / statistics.median(copies) < 1.15 for rate in reported)


def test_the_library_fake_answers_hwtops_calls_as_the_real_driver_did(tmp_path: Path) -> None:
    """The demo 'h200-vm' (modelled on this machine) through the real bindings: the same functions called, each
    answering as the driver did (fan and NVLink state NOT_SUPPORTED, event waits timing out, the rest ok), the
    PCIe counters 32-bit, and the same static facts."""
    summary = capture(tmp_path, "load", seconds=30, interval=1.0, demo="h200-vm", reads=3)
    assert summary["gpus"] == 1
    assert outcomes(tmp_path / "nvml-calls-load.jsonl") == outcomes(CAPTURE / "nvml-calls-load.jsonl")
    fake_fields = [c for c in jsonl(tmp_path / "nvml-calls-load.jsonl")[1:]
                   if c["call"] == "nvmlDeviceGetFieldValues"]
    assert {r["valueType"] for c in fake_fields for r in c["result"]} == {abi.VALUE_UINT}
    static = ("name", "pci_bus_id", "memory_total_bytes", "memory_reserved_bytes", "power_limit_w",
              "sm_clock_max_mhz", "mem_clock_max_mhz", "pcie", "fan_percent", "pstate", "ecc_enabled",
              "compute_capability", "mig_enabled", "nvlink_tx_bytes_per_s")
    real = jsonl(CAPTURE / "gpus-load.jsonl")[-1]
    fake = jsonl(tmp_path / "gpus-load.jsonl")[-1]
    for key in static:
        real_value, fake_value = real["gpus"][0][key], fake["gpus"][0][key]
        if key == "pcie":  # the link; its traffic is the demo's own
            real_value = {k: v for k, v in real_value.items() if not k.endswith("_per_s")}
            fake_value = {k: v for k, v in fake_value.items() if not k.endswith("_per_s")}
        assert fake_value == real_value, key
    assert {k: v for k, v in fake["system"].items() if k != "source"} == \
        {k: v for k, v in real["system"].items() if k != "source"}
