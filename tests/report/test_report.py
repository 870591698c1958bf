"""`hwtop report`: tiers of every demo profile, the fit arithmetic against hand-computed cases, the storage
measurement on a real file with the page cache bypassed, the CPU-only measurement messages, the command."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from hwtop.demo.profiles import PROFILES
from hwtop.probes.gpu_caps import capabilities
from hwtop.report.checks import checks, tier
from hwtop.report.facts import gather
from hwtop.report.fit import GIB, estimate
from hwtop.report.storage import measure
from tests.usage import assert_one_line_error

HWTOP = [sys.executable, "-m", "hwtop.cli.main"]

EXPECTED_TIERS = {"gtx1660s": "entry", "rtx3050": "entry", "rtx3090": "professional", "ws-2x3090": "professional",
                  "a4000": "professional", "dgx-a100": "enterprise", "h100-pcie": "enterprise", "h200": "enterprise",
                  "h200-vm": "enterprise"}


def test_every_demo_profile_is_classified():
    assert set(EXPECTED_TIERS) == set(PROFILES)
    for name, expected in EXPECTED_TIERS.items():
        assert tier(gather(name)).name == expected, name


def test_checks_show_the_measured_value_beside_the_guide():
    by_name = {c.name: c for c in checks(gather("gtx1660s"))}
    assert by_name["Tensor Cores (AMP speed-up)"].status == "short"  # Turing GTX 16: no Tensor Cores
    assert by_name["GPU0 PCIe link"].measured.startswith("Gen3 x16") and by_name["GPU0 PCIe link"].status == "short"
    assert by_name["CPU cores / threads"].measured == "6 / 12" and by_name["CPU cores / threads"].status == "short"
    assert by_name["L3 cache"].measured == "32 MiB" and by_name["L3 cache"].status == "pass"
    assert by_name["Dataset storage"].status == "short"  # SATA SSD and HDD only
    dgx = {c.name: c for c in checks(gather("dgx-a100"))}
    assert dgx["NVLink between GPUs"].status == "pass" and "12 links each" in dgx["NVLink between GPUs"].measured
    assert dgx["GPU0,1,2,3,4,5,6,7 PCIe link"].status == "pass"
    ws = {c.name: c for c in checks(gather("ws-2x3090"))}
    assert ws["NVLink between GPUs"].status == "short"


def test_no_gpu_is_a_tier_of_its_own(monkeypatch):
    from hwtop.report import facts as facts_module

    box = facts_module.BoxFacts("this machine", (), "no NVIDIA driver", "cpu", 2, 2, None, 8 * GIB, 0, ())
    assert tier(box).name == "none" and "no NVIDIA driver" in tier(box).why


def test_capabilities():
    assert capabilities("NVIDIA GeForce GTX 1660 SUPER", (7, 5)).tensor_cores is False
    assert capabilities("NVIDIA GeForce RTX 2080 Ti", (7, 5)).tensor_cores is True
    a100 = capabilities("NVIDIA A100-SXM4-80GB", (8, 0))
    assert a100.tf32 and a100.bf16 and not a100.fp8
    assert capabilities("NVIDIA H100 PCIe", (9, 0)).fp8
    assert capabilities("x", None) is None


# ----- fit arithmetic, by hand -----

def test_fp32_adam_is_16_bytes_per_parameter_before_activations():
    fit = estimate(1e9, "adam", amp=False, gpu_memory_bytes=80 * GIB)
    assert fit.bytes_per_param == 16
    assert fit.total_bytes == 16e9 + GIB  # + the 1 GiB context convention
    assert fit.fits is True


def test_amp_adam_uses_the_zero_convention():
    """fp16 weights 2 + fp16 grads 2 + fp32 master 4 + Adam 8 = 16 B; SGD with momentum 12 B."""
    fit = estimate(7e9, "adam", amp=True, gpu_count=8, gpu_memory_bytes=80 * GIB)
    assert [line.bytes for line in fit.lines[:4]] == [14e9, 14e9, 28e9, 56e9]
    assert fit.total_bytes == 112e9 + GIB and fit.fits is False
    fsdp = next(c for c in fit.changes if c.startswith("FSDP"))
    assert f"{(112e9 / 8 + GIB) / GIB:.2f} GiB per GPU (fits)" in fsdp
    assert estimate(1e9, "sgd", amp=True).bytes_per_param == 12
    assert estimate(1e9, "sgd", amp=False).bytes_per_param == 12


def test_activations_halve_under_amp_and_batch_halving_is_offered():
    fit = estimate(1.2e8, "adam", amp=False, batch=32, activation_gb=5.0, gpu_memory_bytes=6 * GIB)
    assert fit.total_bytes == pytest.approx(1.2e8 * 16 + 5e9 + GIB)
    assert fit.fits is False
    assert any(c.startswith("AMP (--amp): activations halve") for c in fit.changes)
    assert any("batch 16 with gradient accumulation of 2 (same effective batch 32)" in c for c in fit.changes)
    amp = estimate(1.2e8, "adam", amp=True, batch=32, activation_gb=5.0, gpu_memory_bytes=6 * GIB)
    assert amp.total_bytes == pytest.approx(1.2e8 * 16 + 2.5e9 + GIB) and amp.fits is True


def test_host_ram_need_is_a_checkpoint_per_rank_not_the_guides_rule():
    fit = estimate(1e8, gpu_count=4, ram_bytes=64 * GIB)
    assert fit.ram_need_bytes == 4 * 4e8  # 0.4 GB per rank, not "80 GB"


def test_bad_fit_input():
    with pytest.raises(ValueError, match="more than 0"):
        estimate(0)
    with pytest.raises(ValueError, match="unknown optimizer"):
        estimate(1e6, "lamb")


# ----- storage -----

@pytest.mark.slow  # over the fast suite's minute on two cores (--durations)
def test_storage_reads_the_bytes_it_claims_without_the_page_cache(tmp_path):
    data = tmp_path / "shard-000.bin"
    size = 64 << 20
    with open(data, "wb") as handle:
        for _ in range(size // (1 << 20)):
            handle.write(os.urandom(1 << 20))
        handle.flush()
        os.fsync(handle.fileno())
    first = measure(str(tmp_path))
    second = measure(str(tmp_path))
    assert first.bytes_read == size and first.files == 1 and second.bytes_read == size
    # a cached second read would be many times faster; evicted, it pays the device again
    assert second.bytes_per_s < 10 * first.bytes_per_s
    limited = measure(str(data), limit_bytes=10 << 20)
    assert limited.bytes_read == 10 << 20


@pytest.mark.slow  # a long subprocess or network wait; CI runs it as a second step
def test_storage_of_an_empty_or_missing_path(tmp_path):
    with pytest.raises(OSError, match="no readable files"):
        measure(str(tmp_path))
    result = subprocess.run([*HWTOP, "report", "--storage", str(tmp_path / "missing")], capture_output=True,
                            text=True, timeout=120)
    assert result.returncode == 0 and "cannot measure" in result.stdout and "no readable files" in result.stdout


# ----- the command -----

def run(*args: str, timeout: float = 180) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*HWTOP, "report", *args], capture_output=True, text=True, timeout=timeout)


@pytest.mark.slow  # a long subprocess or network wait; CI runs it as a second step
def test_report_here_is_readable_and_json_follows_the_schema():
    text = run()
    assert text.returncode == 0
    assert text.stdout.startswith("hwtop report · this machine")
    assert "Checks (measured · the guide's figure):" in text.stdout
    data = json.loads(run("--json").stdout)
    assert data["schema"] == "hwtop.report/1" and data["facts"]["logical_cores"] == os.cpu_count()
    assert {c["status"] for c in data["checks"]} <= {"pass", "short", "info"}


@pytest.mark.slow  # over the fast suite's minute on two cores (--durations)
def test_demo_dgx_7b_amp_report():
    result = run("--demo", "dgx-a100", "--params", "7e9", "--amp")
    out = result.stdout
    assert result.returncode == 0
    assert "Tier: Enterprise" in out and "GPU0-7 (8x) NVIDIA A100-SXM4-80GB" in out
    assert "Fit: 7B parameters, adam, AMP" in out and "does NOT fit in the smallest GPU's 80.0 GiB" in out
    assert "FSDP full sharding (ZeRO-3) over 8 GPUs" in out
    data = json.loads(run("--demo", "dgx-a100", "--params", "7e9", "--amp", "--json").stdout)
    assert data["fit"]["bytes_per_param"] == 16 and data["fit"]["fits"] is False


@pytest.mark.slow
def test_measurements_on_a_cpu_only_machine():
    data = json.loads(run("--pcie", "--compute", "--json").stdout)["measurements"]
    assert data["cuda"] is False
    assert data["pcie_error"].startswith("--pcie needs a CUDA GPU")
    dtypes = {row["dtype"]: row["tflops"] for row in data["compute"]}
    assert set(dtypes) == {"fp32", "bf16"} and all(v > 0 for v in dtypes.values())
    assert "this is the CPU's matmul throughput" in data["compute_note"]
    text = run("--pcie").stdout
    assert "PCIe: --pcie needs a CUDA GPU" in text


@pytest.mark.parametrize(("args", "message"), [
    (("--amp",), "--amp need --params"),
    (("--params", "-3"), "must be a positive number"),
    (("--params", "lots"), "not a number"),
    (("--demo", "dgx-a100", "--storage", "/tmp"), "measure this machine: not with --demo"),
    (("--optimizer", "lamb", "--params", "1e6"), "invalid choice: 'lamb'"),
])
@pytest.mark.slow  # over the fast suite's minute on two cores (--durations)
def test_bad_report_usage_exits_2_with_one_line(args, message):
    assert_one_line_error(run(*args), message)


async def test_report_screen_in_the_tui():
    from hwtop.tui.app import HwtopApp
    from hwtop.tui.report_screen import ReportScreen
    from tests.factories import ScriptedSource, demo_snapshots
    from tests.tui.screens import opened_report

    app = HwtopApp(ScriptedSource(demo_snapshots("h200")))
    async with app.run_test(size=(140, 45)) as pilot:
        screen = await opened_report(app, pilot, polls=100)
        assert "hwtop report · demo:h200" in screen.text and "Tier: Enterprise" in screen.text
        assert "FP8" in screen.text and "Hopper" in screen.text
        await pilot.press("escape")
        await pilot.pause()
        assert not isinstance(app.screen, ReportScreen)
