"""Real RAS answers, where scripts/nccl-ras-check.sh saved them on a lent GPU machine
(tests/fixtures/nccl-ras/device/VERSION/): both formats parse, and agree on the communicator. Skipped until that
script has run. (The answers NCCL's own code printed at each tag are test_versions.py's.)"""

from __future__ import annotations

from pathlib import Path

import pytest

from hwtop.probes.nccl_ras.parse_json import parse_json
from hwtop.probes.nccl_ras.parse_text import parse_text

DEVICE = Path(__file__).resolve().parents[2] / "fixtures" / "nccl-ras" / "device"


def read(name: str) -> list[str]:
    found = sorted(DEVICE.glob(f"*/{name}"))
    if not found:
        pytest.skip(f"no {name} yet: run scripts/nccl-ras-check.sh on a GPU machine")
    return [path.read_text() for path in found]


def test_real_json_answer() -> None:
    for text in read("status.json"):
        reply = parse_json(text)
        assert reply.comms and all(r.pid for c in reply.comms for r in c.ranks if not r.missing)
        assert any(dict(r.counts).get("AllReduce", 0) > 0 for c in reply.comms for r in c.ranks)


def test_real_text_answer() -> None:
    for text in read("status.txt"):
        reply = parse_text(text)
        assert reply.nccl_version and reply.comms
