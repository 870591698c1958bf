"""A config file's threshold moves a panel's mark and the finding together: the panels judge with the rules'
own functions (advice/judge.py) and the session's thresholds, never the default table."""

from __future__ import annotations

import pytest
from rich.text import Text

from hwtop.model.job import JobProcess, JobSnapshot
from hwtop.model.snapshot import NicSnapshot
from hwtop.session.config import load
from hwtop.tui.app import HwtopApp
from hwtop.widgets import palette
from hwtop.widgets.gpu import GpuPanel
from hwtop.widgets.job import JobPanel
from hwtop.widgets.network import NetworkPanel
from hwtop.widgets.topology import TopologyPanel
from tests.advice_timeline import Timeline
from tests.factories import ScriptedSource

HOLD_AT_ONCE = "[advice.hold_s]\npcie-degraded = 0\n"  # the scripted source repeats one snapshot: no time passes


def _marked(lines: list[Text], needle: str, style: str) -> bool:
    """Whether the text `needle` on some line is drawn in `style`."""
    for line in lines:
        at = line.plain.find(needle)
        if at >= 0:
            return any(span.start <= at < span.end and str(span.style) == style for span in line.spans)
    raise AssertionError(f"{needle!r} not drawn")


def _degraded_link_snapshots():
    """An RTX 3090 busy at 90% whose link trained to Gen3 x8 of Gen4 x16 (the fake NVML, through the probe)."""
    t = Timeline("rtx3090", topology=True)
    t.fake.set_pcie_link(0, 3, 8)
    t.fake.set_load(0, 0.9)
    return [t.tick(topology=t.topology, numa=t.numa) for _ in range(3)]


async def _seen(config_text: str, tmp_path) -> tuple[bool, bool, bool]:
    """(the pcie-degraded finding, the GPU panel's mark, the topology view's mark) under a config file."""
    config = tmp_path / "config.toml"
    config.write_text(config_text)
    app = HwtopApp(ScriptedSource(_degraded_link_snapshots()), interval=30.0, thresholds=load(str(config)).thresholds)
    async with app.run_test(size=(160, 50)) as pilot:
        await app.first_frame.wait()
        await pilot.pause()
        assert app.frame is not None
        finding = "pcie-degraded" in {f.id for f in app.frame.findings}
        gpu = app.query_one(GpuPanel)
        gpu_mark = _marked(gpu.lines(gpu.content_size.width), "PCIe 3x8", palette.WARN)
        topology = TopologyPanel()
        snapshot = app.frame.snapshot
        topology.show(snapshot.topology, snapshot.numa, snapshot.gpus, snapshot.nics, app.thresholds)
        topology_mark = "degraded while busy" in "\n".join(line.plain for line in topology.lines(160))
    return finding, gpu_mark, topology_mark


@pytest.mark.slow  # over the fast suite's minute on two cores (--durations)
async def test_a_raised_busy_threshold_clears_the_link_mark_and_the_finding_together(tmp_path) -> None:
    assert await _seen(HOLD_AT_ONCE, tmp_path) == (True, True, True)  # 90% busy: above the default 30%
    raised = HOLD_AT_ONCE + "\n[advice.thresholds]\ngpu_busy_util_percent = 95\n"
    assert await _seen(raised, tmp_path) == (False, False, False)  # 90% is no longer busy, for both


def test_the_network_panel_folds_a_port_by_the_configured_idle_rate(tmp_path) -> None:
    port = NicSnapshot("mlx5_0", "infiniband", 200.0, 2e6, 1e3, state="active", port=1)
    config = tmp_path / "config.toml"
    config.write_text("[advice.thresholds]\nnetwork_idle_bytes_per_s = 5e6\n")
    default, raised = NetworkPanel(), NetworkPanel()
    default.show((port,), rows=3)
    raised.show((port,), rows=3, thresholds=load(str(config)).thresholds)
    assert not default.quiet and default.lines(100)[0].plain.startswith("mlx5_0")
    assert raised.quiet and raised.lines(100)[0].plain.startswith("Network 1 port quiet")


def test_the_job_panel_marks_far_memory_by_the_configured_share(tmp_path) -> None:
    rank = JobProcess(500, 1, "python", "python train.py", "rank 0", 0, 0, "R", 90.0, 1 << 30, 8, (0, 1),
                      gpus=((0, 1 << 30),), numa_pages=((0, 40), (1, 60)))
    job = JobSnapshot("pid 500", (500,), "running", (rank,), 90.0, 1 << 30)
    config = tmp_path / "config.toml"
    config.write_text("[advice.thresholds]\nnuma_local_memory_share = 0.3\n")
    far = "only 40% on the GPU's node 0"
    panel = JobPanel()
    panel.show(job, {}, {0: 0}, {0: 0, 1: 0})
    assert _marked(panel.lines(200), far, palette.CRIT_STRONG)  # 40% local, under the default half
    panel.show(job, {}, {0: 0}, {0: 0, 1: 0}, None, load(str(config)).thresholds)
    assert far not in "\n".join(line.plain for line in panel.lines(200))


def test_topo_link_health_judges_by_the_thresholds_it_is_given(tmp_path) -> None:
    from hwtop.cli.topo import link_health

    snapshot = _degraded_link_snapshots()[-1]
    assert snapshot.topology is not None
    config = tmp_path / "config.toml"
    config.write_text("[advice.thresholds]\ngpu_busy_util_percent = 95\n")
    assert "DEGRADED while 90% busy" in link_health(snapshot.topology, snapshot.gpus)[0]
    assert "below its maximum while idle (90%)" in link_health(snapshot.topology, snapshot.gpus,
                                                               load(str(config)).thresholds)[0]
