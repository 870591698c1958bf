"""Recorded conformance: the probe's figures on a real GPU against nvidia-smi's, from a capture made by
tests/gpu/record_conformance.py on a machine with a GPU. No capture yet: skipped, saying so."""

from __future__ import annotations

import json
import os

import pytest

CAPTURE = os.path.join(os.path.dirname(__file__), "fixtures", "nvml_conformance.json")


@pytest.mark.skipif(not os.path.exists(CAPTURE), reason="no real-GPU capture recorded yet "
                    "(run tests/gpu/record_conformance.py on a GPU machine)")
def test_probe_agrees_with_nvidia_smi() -> None:
    with open(CAPTURE) as handle:
        capture = json.load(handle)
    assert capture["probe"], "capture has no GPU"
    for gpu, smi in zip(capture["probe"], capture["nvidia_smi"], strict=True):
        assert gpu["index"] == int(smi["index"]) and gpu["name"] == smi["name"] and gpu["uuid"] == smi["uuid"]
        assert gpu["pci_bus_id"].lower().endswith(smi["pci.bus_id"].lower()[-12:])
        assert gpu["memory_total_bytes"] // 2**20 == pytest.approx(float(smi["memory.total"]), abs=1)
        assert gpu["power_limit_w"] == pytest.approx(float(smi["enforced.power.limit"]), abs=1)
        assert gpu["sm_clock_max_mhz"] == pytest.approx(float(smi["clocks.max.sm"]), abs=1)
        assert gpu["pcie"]["max_gen"] == int(smi["pcie.link.gen.max"])
        assert gpu["pcie"]["max_width"] == int(smi["pcie.link.width.max"])
        assert ".".join(map(str, gpu["compute_capability"])) == smi["compute_cap"]
        # Live values move between the two reads: near, not equal.
        assert gpu["temperature_c"] == pytest.approx(float(smi["temperature.gpu"]), abs=3)
        assert gpu["memory_used_bytes"] // 2**20 == pytest.approx(float(smi["memory.used"]), abs=256)
