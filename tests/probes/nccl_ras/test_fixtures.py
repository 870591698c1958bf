"""Real RAS answers, where scripts/nccl-ras-check.sh saved them on a GPU machine (tests/fixtures/nccl-ras/):
both parse, and agree on the communicator. Skipped until that script has run."""

from __future__ import annotations

from pathlib import Path

import pytest

from hwtop.probes.nccl_ras.parse_json import parse_json
from hwtop.probes.nccl_ras.parse_text import parse_text

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "nccl-ras"


def read(name: str) -> str:
    path = FIXTURES / name
    if not path.exists():
        pytest.skip(f"no {path.name} yet: run scripts/nccl-ras-check.sh on a GPU machine")
    return path.read_text()


def test_real_json_answer() -> None:
    reply = parse_json(read("status.json"))
    assert reply.comms and all(r.pid for c in reply.comms for r in c.ranks if not r.missing)
    assert any(dict(r.counts).get("AllReduce", 0) > 0 for c in reply.comms for r in c.ranks)


def test_real_text_answer() -> None:
    reply = parse_text(read("status.txt"))
    assert reply.nccl_version and reply.comms
