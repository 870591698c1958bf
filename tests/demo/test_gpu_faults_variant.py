"""The gpu-faults variant end to end: its faults travel the fake NVML, the real bindings and the probe into the
gpu-errors findings and the exporter's dcgm-exporter series; and (slow, promtool) the shipped alerts fire on
those series as `hwtop export` writes them, a scrape a minute."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from hwtop.exporter.metrics import families
from hwtop.exporter.text import render
from hwtop.model.frame import Frame
from tests.demo.played import play

ROOT = Path(__file__).resolve().parents[2]
HOST = "dgx-faults"
FAULTS = re.compile(r"^(DCGM_FI_DEV_(?:\w*REMAP\w*|NVLINK_\w+_ERROR_COUNT_TOTAL|XID_ERRORS))\{(.*)\} (\S+)$", re.M)
SCRAPED = 'job="hwtop",instance="dgx-faults:9400"'  # what Prometheus adds to each series it scrapes


def exported(frame: Frame) -> str:
    return render(families(frame.snapshot, frame.findings, "test", hostname=HOST)).decode()


@pytest.fixture(scope="module")
def frames() -> list[Frame]:
    return play(None, 27.0, "dgx-a100:gpu-faults", step=3.0)


@pytest.mark.slow  # over the fast suite's minute on two cores (--durations)
def test_each_fault_is_one_finding_on_its_gpu_and_a_series_under_dcgm_s_name(frames: list[Frame]) -> None:
    findings = {f.scope: f for f in frames[-1].findings if f.id == "gpu-errors"}
    assert set(findings) == {"GPU2", "GPU3", "GPU6"}
    assert (findings["GPU6"].title, findings["GPU6"].severity) == ("GPU6 row remapping failed", "critical")
    assert (findings["GPU2"].title, findings["GPU2"].severity) == ("GPU2 row remap pending: reset needed", "warning")
    assert findings["GPU2"].evidence[1].startswith("Xid 63 recorded it")
    assert (findings["GPU3"].title, findings["GPU3"].severity) == ("GPU3 NVLink errors climbing", "warning")
    samples = {(name, re.search(r'gpu="(\d+)"', labels)[1]): float(value)  # type: ignore[index]
               for name, labels, value in FAULTS.findall(exported(frames[-1]))}
    assert samples[("DCGM_FI_DEV_ROW_REMAP_FAILURE", "6")] == 1 and samples[("DCGM_FI_DEV_ROW_REMAP_PENDING", "2")] == 1
    assert samples[("DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS", "6")] == 8
    assert samples[("DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS", "5")] == 2  # rows remapped long ago: no finding
    assert samples[("DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL", "3")] > 0
    assert samples[("DCGM_FI_DEV_ROW_REMAP_FAILURE", "0")] == 0 and samples[("DCGM_FI_DEV_ROW_REMAP_PENDING", "0")] == 0


def promtool_case(frames: list[Frame]) -> dict:
    """The frames' fault series as promtool input, one frame a minute, as Prometheus would have scraped them."""
    values: dict[str, list[str]] = {}
    for minute, frame in enumerate(frames):
        for name, labels, value in FAULTS.findall(exported(frame)):
            values.setdefault(f"{name}{{{labels},{SCRAPED}}}", ["_"] * len(frames))[minute] = value
    return {"interval": "1m", "input_series": [{"series": name, "values": " ".join(points)}
                                                for name, points in values.items()]}


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("promtool") is None, reason="promtool (Debian's prometheus package) is missing")
def test_the_shipped_alerts_fire_on_hwtop_s_own_fault_series(frames: list[Frame], tmp_path: Path) -> None:
    """Every firing alert over those series (ALERTS, severity and the GPU's labels): the failed remap, the pending
    one, the NVLink replays, and the Xids that reported the remaps; nothing on the healthy GPUs."""
    gpus = {g.index: g for g in frames[-1].snapshot.gpus}

    def firing(alert: str, gpu: int, severity: str, **more: str) -> dict:
        card = gpus[gpu]
        labels = {"alertname": alert, "alertstate": "firing", "severity": severity, "gpu": str(gpu),
                  "UUID": card.uuid, "pci_bus_id": card.pci_bus_id, "device": f"nvidia{gpu}", "modelName": card.name,
                  "Hostname": HOST, "job": "hwtop", "instance": "dgx-faults:9400", **more}
        return {"labels": "ALERTS{" + ",".join(f'{k}="{v}"' for k, v in sorted(labels.items())) + "}", "value": 1}

    expected = [firing("GpuRowRemapFailure", 6, "critical"), firing("GpuRowRemapPending", 2, "warning"),
                firing("GpuNvlinkErrors", 3, "warning", error="replay"), firing("GpuXidError", 2, "critical"),
                firing("GpuXidError", 6, "critical")]
    check = {"expr": 'ALERTS{alertstate="firing"}', "eval_time": f"{len(frames) - 1}m", "exp_samples": expected}
    (tmp_path / "rules.yml").write_text((ROOT / "deploy" / "hwtop-alerts.yml").read_text())
    test = {**promtool_case(frames), "promql_expr_test": [check]}
    (tmp_path / "test.yml").write_text(yaml.safe_dump({"rule_files": ["rules.yml"], "evaluation_interval": "1m",
                                                       "tests": [test]}))
    done = subprocess.run(["promtool", "test", "rules", "test.yml"], capture_output=True, text=True, timeout=120,
                          cwd=tmp_path)
    assert done.returncode == 0 and "SUCCESS" in done.stdout, done.stdout + done.stderr
