"""The judgements the rules and the panels share (advice/judge.py), over the one model of a PCIe link."""

from __future__ import annotations

from hwtop.advice.judge import link_degraded, memory_far, port_busy
from hwtop.advice.thresholds import Thresholds
from hwtop.demo.nvml import FakeNvmlLibrary
from hwtop.model.snapshot import LinkState, NicSnapshot, PcieLink, TopoDevice
from hwtop.probes.gpu import NvmlProbe

T = Thresholds()


def test_degraded_link_only_flagged_while_busy() -> None:
    assert link_degraded(LinkState(3, 16, 4, 16), 95, T)
    assert link_degraded(LinkState(4, 8, 4, 16), 60, T)
    assert not link_degraded(LinkState(1, 16, 4, 16), 0, T)  # idle: dropped to gen 1 to save power
    assert not link_degraded(LinkState(4, 16, 4, 16), 100, T)
    assert not link_degraded(LinkState(3, 16, 4, 16), None, T)
    assert not link_degraded(LinkState(3, 16, 4, 16), 60, Thresholds({"gpu_busy_util_percent": 70}))


def test_idle_fake_gpu_drops_its_link_and_is_not_flagged() -> None:
    clock = [0.0]
    fake = FakeNvmlLibrary("rtx3090", clock=lambda: clock[0])
    probe = NvmlProbe(fake.pynvml, clock=lambda: clock[0])
    fake.set_load(0, 0.0)
    gpu = probe.read()[1][0]
    assert gpu.pcie is not None and gpu.pcie.gen == 1 and not link_degraded(gpu.pcie, gpu.util_percent, T)
    fake.set_load(0, 0.9)
    fake.set_pcie_link(0, 3, 16)
    gpu = probe.read()[1][0]
    assert gpu.pcie is not None and link_degraded(gpu.pcie, gpu.util_percent, T)


def test_one_link_model_for_nvml_and_sysfs_with_the_schema_unchanged() -> None:
    """A GPU's live link is a LinkState with throughput; a placed device's sysfs link reads as one, and both
    keep the snapshot schema's keys."""
    live = PcieLink(3, 8, 4, 16, 1.0, 2.0)
    device = TopoDevice("GPU0", "gpu", "0000:07:00.0", 0, (0, 1), 3, 8, 4, 16)
    assert isinstance(live, LinkState) and device.link == LinkState(3, 8, 4, 16) and device.link.below_max
    import msgspec

    assert list(msgspec.to_builtins(live)) == ["gen", "width", "max_gen", "max_width", "tx_bytes_per_s",
                                               "rx_bytes_per_s"]
    assert {"link_gen", "link_width", "max_link_gen", "max_link_width"} <= set(msgspec.to_builtins(device))
    assert "link" not in msgspec.to_builtins(device)


def test_far_memory_and_a_busy_port_follow_the_thresholds_in_use() -> None:
    pages = ((0, 40), (1, 60))
    assert memory_far(pages, 0, T) == 0.4 and memory_far(pages, 1, T) is None
    assert memory_far(pages, 0, Thresholds({"numa_local_memory_share": 0.3})) is None
    assert memory_far(None, 0, T) is None and memory_far(((1, 0),), 0, T) is None
    port = NicSnapshot("mlx5_0", "infiniband", 200.0, 2e6, 1e3, state="active", port=1)
    assert port_busy(port, T) and not port_busy(port, Thresholds({"network_idle_bytes_per_s": 5e6}))
