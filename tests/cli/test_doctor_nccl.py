"""doctor's job facts carry what decides NCCL's transport: the ranks' NCCL_* variables and their world sizes."""

from __future__ import annotations

from pathlib import Path

from hwtop.cli.doctor.facts import job_facts
from hwtop.cli.doctor.render import job_lines
from tests.advice.test_network_rules import _torchrun_with_nfs


def test_doctor_names_the_ranks_nccl_settings(tmp_path: Path) -> None:
    _, probe = _torchrun_with_nfs(tmp_path)
    facts = job_facts(probe.read(now=100.0), 10.0)
    assert facts.nccl_env == {"NCCL_IB_DISABLE": "1", "NCCL_SOCKET_IFNAME": "eno1"}
    assert (facts.world_size, facts.local_world_size) == (16, 8)
    assert "  NCCL: NCCL_IB_DISABLE=1 NCCL_SOCKET_IFNAME=eno1" in job_lines(facts)
