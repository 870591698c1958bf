"""Recorded conformance: hwtop's figures on a real GPU against nvidia-smi's, from a capture made by
scripts/capture-gpu.sh on a GPU machine and committed under tests/fixtures/gpu-capture/. No capture yet (none
could be made without a GPU): that test is skipped, saying so; the reader of nvidia-smi's XML is tested here on
a sample written in its schema."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

CAPTURE = Path(__file__).parents[1] / "fixtures" / "gpu-capture"


def _number(text: str | None) -> float | None:
    """'81920 MiB', '400.00 W', '16x', '4' -> the number; 'N/A' and absent -> None."""
    if not text:
        return None
    head = text.strip().split()[0].rstrip("x")
    try:
        return float(head)
    except ValueError:
        return None


def _first(gpu: ET.Element, *paths: str) -> str | None:
    for path in paths:
        found = gpu.findtext(path)
        if found is not None:
            return found.strip()
    return None


def smi_cards(xml_text: str) -> tuple[str | None, list[dict]]:
    """(driver version, one dict per GPU) from `nvidia-smi -q -x`."""
    root = ET.fromstring(xml_text)
    cards = []
    for gpu in root.findall("gpu"):
        cards.append({
            "bus_id": gpu.get("id"),
            "name": _first(gpu, "product_name"),
            "uuid": _first(gpu, "uuid"),
            "memory_total_mib": _number(_first(gpu, "fb_memory_usage/total")),
            "power_limit_w": _number(_first(gpu, "gpu_power_readings/current_power_limit",
                                            "power_readings/enforced_power_limit")),
            "sm_max_mhz": _number(_first(gpu, "max_clocks/sm_clock")),
            "pcie_max_gen": _number(_first(gpu, "pci/pci_gpu_link_info/pcie_gen/max_link_gen")),
            "pcie_max_width": _number(_first(gpu, "pci/pci_gpu_link_info/link_widths/max_link_width")),
            "ecc": _first(gpu, "ecc_mode/current_ecc"),
            "mig": _first(gpu, "mig_mode/current_mig"),
        })
    return root.findtext("driver_version"), cards


def agree(snapshot: dict, card: dict) -> list[str]:
    """What differs between one GPU as hwtop recorded it and as nvidia-smi printed it."""
    problems = []

    def check(what: str, ours: object, theirs: object, close: float = 0.0) -> None:
        if theirs is None:
            return
        if ours is None or (abs(float(ours) - float(theirs)) > close if close else ours != theirs):  # type: ignore[arg-type]
            problems.append(f"{what}: hwtop {ours!r}, nvidia-smi {theirs!r}")

    check("name", snapshot["name"], card["name"])
    check("uuid", snapshot["uuid"], card["uuid"])
    check("bus id", (snapshot["pci_bus_id"] or "").lower()[-12:], (card["bus_id"] or "").lower()[-12:])
    total = snapshot["memory_total_bytes"]
    check("memory total MiB", None if total is None else total / 2**20, card["memory_total_mib"], close=1)
    check("power limit W", snapshot["power_limit_w"], card["power_limit_w"], close=1)
    check("max SM clock", snapshot["sm_clock_max_mhz"], card["sm_max_mhz"], close=1)
    check("PCIe max gen", (snapshot["pcie"] or {}).get("max_gen"), card["pcie_max_gen"], close=0.5)
    check("PCIe max width", (snapshot["pcie"] or {}).get("max_width"), card["pcie_max_width"], close=0.5)
    if card["ecc"] in ("Enabled", "Disabled"):
        check("ECC", snapshot["ecc_enabled"], card["ecc"] == "Enabled")
    if card["mig"] in ("Enabled", "Disabled"):
        check("MIG", snapshot["mig_enabled"], card["mig"] == "Enabled")
    return problems


@pytest.mark.skipif(not (CAPTURE / "nvidia-smi-q.xml").exists(),
                    reason="no real-GPU capture yet (run scripts/capture-gpu.sh tests/fixtures/gpu-capture on a GPU "
                           "machine)")
def test_probe_agrees_with_nvidia_smi() -> None:
    driver, cards = smi_cards((CAPTURE / "nvidia-smi-q.xml").read_text())
    reads = [json.loads(line) for line in (CAPTURE / "gpus-idle.jsonl").read_text().splitlines()]
    last = reads[-1]
    assert last["system"]["driver_version"] == driver
    assert len(last["gpus"]) == len(cards)
    problems = [f"GPU{g['index']} {p}" for g, c in zip(last["gpus"], cards, strict=True) for p in agree(g, c)]
    assert problems == []


SAMPLE = """<?xml version="1.0" ?>
<nvidia_smi_log>
  <driver_version>550.90.07</driver_version>
  <gpu id="00000000:07:00.0">
    <product_name>NVIDIA A100-SXM4-80GB</product_name>
    <uuid>GPU-aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee</uuid>
    <mig_mode><current_mig>Disabled</current_mig><pending_mig>Disabled</pending_mig></mig_mode>
    <pci><pci_gpu_link_info>
      <pcie_gen><max_link_gen>4</max_link_gen><current_link_gen>4</current_link_gen></pcie_gen>
      <link_widths><max_link_width>16x</max_link_width><current_link_width>16x</current_link_width></link_widths>
    </pci_gpu_link_info></pci>
    <fb_memory_usage><total>81920 MiB</total><used>4 MiB</used></fb_memory_usage>
    <ecc_mode><current_ecc>Enabled</current_ecc><pending_ecc>Enabled</pending_ecc></ecc_mode>
    <gpu_power_readings><current_power_limit>400.00 W</current_power_limit></gpu_power_readings>
    <max_clocks><graphics_clock>1410 MHz</graphics_clock><sm_clock>1410 MHz</sm_clock></max_clocks>
  </gpu>
</nvidia_smi_log>
"""


def test_the_nvidia_smi_reader_and_the_comparison_on_a_sample() -> None:
    driver, cards = smi_cards(SAMPLE)
    assert driver == "550.90.07" and cards[0]["memory_total_mib"] == 81920 and cards[0]["pcie_max_width"] == 16
    ours = {"index": 0, "name": "NVIDIA A100-SXM4-80GB", "uuid": "GPU-aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee",
            "pci_bus_id": "00000000:07:00.0", "memory_total_bytes": 81920 * 2**20, "power_limit_w": 400.0,
            "sm_clock_max_mhz": 1410.0, "pcie": {"max_gen": 4, "max_width": 16}, "ecc_enabled": True,
            "mig_enabled": False}
    assert agree(ours, cards[0]) == []
    assert agree(dict(ours, memory_total_bytes=80 * 2**30 - 2**30), cards[0]) == [
        "memory total MiB: hwtop 80896.0, nvidia-smi 81920.0"]
