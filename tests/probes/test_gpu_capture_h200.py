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
from hwtop.probes.nvml.counters import CounterRates
from hwtop.probes.nvml.pcie_wide import WideCounters

CAPTURE = Path(__file__).parents[1] / "fixtures" / "gpu-capture" / "h200-r580"
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


def pcie_readings(phase: str) -> list[tuple[str, int, int, int]]:
    """Every reading of fields 197/198 in a phase's recording, the tick's and the poller's: (thread, field id,
    timestamp µs, raw value)."""
    out = []
    for call in jsonl(CAPTURE / f"nvml-calls-{phase}.jsonl")[1:]:
        if call["call"] == "nvmlDeviceGetFieldValues":
            for value in call["result"]:
                if value["fieldId"] in (abi.FI_PCIE_COUNT_TX_BYTES, abi.FI_PCIE_COUNT_RX_BYTES):
                    assert value["valueType"] == abi.VALUE_UINT  # R580: 32-bit counters
                    out.append((call["thread"], value["fieldId"], value["timestamp"], value["value"]["uiVal"]))
    return out


def test_the_real_driver_counts_pcie_bytes_in_32_bits_and_hwtop_keeps_every_wrap() -> None:
    """R580 answers fields 197/198 as unsigned int, wrapping every 4 GiB. Under host-to-device copies at about
    55 GB/s (scripts/h2d_load.py; its own figures are in load.head.log) the counter wraps a dozen times a second:
    the first tick (the copies already running, nothing yet saying "heavy") shows an alias, then the poller reads
    every 50 ms and hwtop reports the copies' rate, 7-10 % above the payload (packet headers, the job's traffic)."""
    readings = pcie_readings("load")
    assert {thread for thread, *_ in readings} == {"MainThread", "hwtop-pcie-poller"}
    copies = statistics.median(float(line.split()[2]) * 1e9 for line in
                               (CAPTURE / "load.head.log").read_text().splitlines() if line.startswith("h2d:"))
    reported = [g["gpus"][0]["pcie"]["rx_bytes_per_s"] for g in jsonl(CAPTURE / "gpus-load.jsonl")[1:]]
    assert reported[0] < 2**32  # the alias of the first second
    assert len(reported) >= 9 and all(1.0 < rate / copies < 1.15 for rate in reported[1:])


def test_replaying_the_real_readings_through_the_widened_counters_gives_what_hwtop_showed() -> None:
    """Today's code over the real driver's numbers: every recorded reading fed in the order it was made, the rate
    taken between the tick's own readings, as the probe does."""
    counters, rates = WideCounters(), CounterRates()
    replayed: dict[int, list[float | None]] = {abi.FI_PCIE_COUNT_TX_BYTES: [], abi.FI_PCIE_COUNT_RX_BYTES: []}
    for thread, field_id, at_us, raw in pcie_readings("load"):
        total, stamp = counters.feed(field_id, raw, at_us, 32)
        if thread == "MainThread":
            replayed[field_id].append(rates.rate((0, field_id, 0), total, stamp, 64))
    shown = [g["gpus"][0]["pcie"] for g in jsonl(CAPTURE / "gpus-load.jsonl")]
    assert replayed[abi.FI_PCIE_COUNT_RX_BYTES] == pytest.approx([p["rx_bytes_per_s"] for p in shown], rel=1e-9)
    assert replayed[abi.FI_PCIE_COUNT_TX_BYTES] == pytest.approx([p["tx_bytes_per_s"] for p in shown], rel=1e-9)
    naive = CounterRates()  # the same readings without the poller's: a second apart, as before the poller
    ticks_only = [(at, raw) for thread, field_id, at, raw in pcie_readings("load")
                  if thread == "MainThread" and field_id == abi.FI_PCIE_COUNT_RX_BYTES]
    aliased = [naive.rate(("rx",), raw, at, 32) for at, raw in ticks_only][1:]
    assert max(a for a in aliased if a is not None) < 2**32 / 0.9 < min(p["rx_bytes_per_s"] for p in shown[2:])


# Calls hwtop makes since the capture was recorded (probes/nvml/faults.py): the fake's answers for them are not
# checked against a real driver until scripts/capture-gpu.sh records them again on a GPU machine.
NOT_CAPTURED = {"nvmlDeviceGetRemappedRows", "nvmlDeviceGetViolationStatus"}


@pytest.mark.slow  # over the fast suite's minute on two cores (--durations)
def test_the_library_fake_answers_hwtops_calls_as_the_real_driver_did(tmp_path: Path) -> None:
    """The demo 'h200-vm' (modelled on this machine) through the real bindings: the same functions called, each
    answering as the driver did (fan and NVLink state NOT_SUPPORTED, event waits timing out, the rest ok), the
    PCIe counters 32-bit, and the same static facts."""
    summary = capture(tmp_path, "load", seconds=30, interval=1.0, demo="h200-vm", reads=3)
    assert summary["gpus"] == 1
    real_calls, fake_calls = outcomes(CAPTURE / "nvml-calls-load.jsonl"), outcomes(tmp_path / "nvml-calls-load.jsonl")
    assert set(fake_calls) - set(real_calls) == NOT_CAPTURED
    assert {call: answer for call, answer in fake_calls.items() if call not in NOT_CAPTURED} == real_calls
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
