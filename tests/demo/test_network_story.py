"""The dgx-a100 demo's network: eight HDR ports beside the GPUs and the management Ethernet, with traffic that
follows the story; nccl-ethernet raises nccl-wrong-transport once NCCL falls back to the Ethernet port, and clears
once the job is relaunched over InfiniBand."""

from __future__ import annotations

import pytest

from hwtop.demo.story import NCCL_ETH_FIXED_S, NCCL_ETH_FROM_S, NCCL_ETH_GRADIENTS, NCCL_ETH_PORT
from tests.demo.test_story import EPOCH, first_with, ids, play

NETWORK_RULES = {"network-saturated", "nccl-wrong-transport", "nic-far-from-gpu", "data-from-network"}


@pytest.mark.slow
def test_nccl_over_ethernet_raises_wrong_transport_then_clears() -> None:
    frames = play("nccl-ethernet", 140)
    raised = first_with(frames, "nccl-wrong-transport")
    assert raised is not None and NCCL_ETH_FROM_S <= raised <= NCCL_ETH_FROM_S + 12
    assert "nccl-wrong-transport" not in ids(frames[-1])
    during = frames[int(NCCL_ETH_FROM_S + 30) // 2]
    (finding,) = [f for f in during.findings if f.id == "nccl-wrong-transport"]
    assert "NCCL_IB_DISABLE=1" in finding.evidence[0]
    assert f"Ethernet port {NCCL_ETH_PORT} carries" in finding.evidence[1]
    assert {f.id for frame in frames for f in frame.findings} & NETWORK_RULES == {"nccl-wrong-transport"}
    before, after = frames[10].snapshot, during.snapshot
    port = {n.name: n for n in after.nics}[NCCL_ETH_PORT]
    # a node's share of a 16-rank ring all-reduce, 2(n-1)/n of the gradients a step, all through the one port
    assert after.workload is not None and after.workload.ranks[0].step_time_s is not None
    ring = 2 * 15 / 16 * NCCL_ETH_GRADIENTS / after.workload.ranks[0].step_time_s
    assert port.rx_bytes_per_s is not None and port.rx_bytes_per_s == pytest.approx(ring, rel=0.03)
    assert port.rx_bytes_per_s > 0.7 * 100e9 / 8
    assert all((n.rx_bytes_per_s or 0) < 1e6 for n in after.nics if n.kind == "infiniband")
    assert all((n.rx_bytes_per_s or 0) > 1e9 for n in before.nics if n.kind == "infiniband")
    assert int(NCCL_ETH_FIXED_S) < 140


@pytest.mark.slow  # over the fast suite's minute on two cores (--durations)
def test_dgx_ports_sit_beside_their_gpus_and_their_counters_add_up_their_rates() -> None:
    from hwtop.demo.machine import demo_sampler

    clock = [0.0]
    sampler = demo_sampler("dgx-a100", "nccl-ethernet", clock=lambda: clock[0], wall=lambda: EPOCH + clock[0])
    try:
        first = sampler.sample()
        clock[0] = 7.5
        second = sampler.sample()
    finally:
        sampler.close()
    ib = [n for n in second.nics if n.kind == "infiniband"]
    assert [(n.name, n.speed_gbps, n.nearest_gpu, n.numa_node) for n in ib] == [
        (f"mlx5_{i}", 200.0, i, i // 4) for i in range(8)]
    assert [n.name for n in second.nics if n.kind == "ethernet"] == ["enp225s0f0", "enp225s0f1"]
    for a, b in zip(first.nics[:8], second.nics[:8], strict=True):  # over InfiniBand: ~1.4 GB/s each way
        assert a.rx_bytes_total is not None and b.rx_bytes_total is not None and b.rx_bytes_per_s is not None
        assert (b.rx_bytes_total - a.rx_bytes_total) / 7.5 == pytest.approx(b.rx_bytes_per_s, rel=0.05)
