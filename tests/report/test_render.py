"""The box report agrees with itself and with the guide's table: the guide is named once before it is cited,
every rate is given in one direction (GB/s each way) and every memory figure with one formatter, md arrays are
arrays (not SSDs). Read from `hwtop report`'s own output, on every demo profile and on this machine."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from hwtop.demo.profiles import PROFILES
from hwtop.probes.disks import disk_kind
from hwtop.report.checks import GUIDE, checks
from hwtop.report.facts import gather
from hwtop.report.render import text

HWTOP = [sys.executable, "-m", "hwtop.cli.main"]
GIB_FIGURE = re.compile(r"(\d+(?:\.\d+)?) GiB")


def report(*args: str) -> str:
    result = subprocess.run([*HWTOP, "report", *args], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    return result.stdout


def _agrees(lines: list[str]) -> None:
    guide = [i for i, line in enumerate(lines) if "guide" in line]
    assert guide and lines[guide[0]].startswith(f"Graded against {GUIDE}."), lines[guide[0]]
    assert sum(GUIDE in line for line in lines) == 1
    ram = next(line for line in lines if line.startswith("Memory: RAM "))
    host_ram = next(line for line in lines if "] Host RAM: " in line)
    assert GIB_FIGURE.search(ram).group(1) == GIB_FIGURE.search(host_ram.split("Host RAM: ")[1]).group(1)


@pytest.mark.parametrize("profile", sorted(PROFILES))
def test_a_demo_report_agrees_with_itself(profile: str) -> None:
    facts = gather(profile)
    lines = text(facts, *_grade(facts)).split("\n")
    _agrees(lines)
    assert not any(re.search(r"\bmd\d+ \(ssd\)", line) for line in lines)


def _grade(facts):  # noqa: ANN001, ANN202
    from hwtop.report.checks import tier

    return tier(facts), checks(facts)


@pytest.mark.slow  # over the fast suite's minute on two cores (--durations)
def test_the_dgx_report_gives_every_link_each_way_as_the_guide_does() -> None:
    out = report("--demo", "dgx-a100")
    lines = out.split("\n")
    _agrees(lines)
    nvlink = next(line for line in lines if "NVLink between GPUs" in line)
    # 12 NVLink 3 links at 25 GB/s each way: 300, half the guide's 600 counted both ways
    assert "12 links each: ≈ 300 GB/s each way" in nvlink
    assert "NVLink 600 GB/s (both directions: ≈ 300 each way)" in nvlink
    assert "16 GB/s (a Gen3 x16 link, each way)" in nvlink
    pcie = next(line for line in lines if "PCIe link:" in line)
    assert "Gen4 x16 (≈ 32 GB/s each way)" in pcie and "64 GB/s counts both directions" in pcie
    storage = next(line for line in lines if "Dataset storage" in line)
    assert "10 nvme, 2 raid" in storage and "ssd" not in storage.split("·")[0]


def test_this_machines_report_agrees_with_itself() -> None:
    _agrees(report().split("\n"))


def test_an_md_array_is_raid_not_an_ssd(tmp_path) -> None:  # noqa: ANN001
    for name, rotational in (("md1", "0"), ("sda", "0"), ("sdb", "1")):
        queue = tmp_path / "sys/block" / name / "queue"
        queue.mkdir(parents=True)
        (queue / "rotational").write_text(rotational + "\n")
    assert [disk_kind(n, str(tmp_path)) for n in ("md1", "sda", "sdb")] == ["raid", "ssd", "hdd"]


def test_the_guide_is_cited_by_what_it_says_not_by_where_it_came_from() -> None:
    """A reader cannot look up "the article hwtop was conceived from": the opening line states the guide's tiers
    and rules instead, with the figures the checks below grade against."""
    assert not re.search(r"conceived|Chinese|article", GUIDE)
    for figure in ("6 GB", "16 GB", "A100/H100", "8 cores", "NVMe"):
        assert figure in GUIDE


def test_a_report_without_a_gpu_says_why_once_and_promises_no_retry(monkeypatch: pytest.MonkeyPatch) -> None:
    """The report reads once: the monitor's "retrying every 10 s" is not its to promise, and the reason there
    is no GPU is given on the tier's line only."""
    from hwtop.probes.nvml import session

    monkeypatch.setattr(session, "nvml_library_loads", lambda: False)
    facts = gather(None)
    out = text(facts, *_grade(facts))
    assert facts.gpus == () and facts.gpu_message == session.NO_LIBRARY
    assert "retrying" not in out
    assert out.count(session.NO_LIBRARY) == 1
    assert next(line for line in out.split("\n") if line.startswith("Tier: ")) == (
        f"Tier: No GPU: CPU only  ({session.NO_LIBRARY})")
