from __future__ import annotations

import json

from hwtop.model.snapshot import SCHEMA
from hwtop.session.sampler import Sampler


def test_failing_probe_lands_in_errors_and_the_rest_arrives() -> None:
    sampler = Sampler()

    def broken() -> None:
        raise OSError("disk stats unreadable")

    sampler.host.disks = broken  # type: ignore[method-assign]
    snapshot = sampler.sample()
    assert [e.probe for e in snapshot.errors] == ["disks"]
    assert "disk stats unreadable" in snapshot.errors[0].message
    assert snapshot.disks == ()
    assert snapshot.cpu is not None and snapshot.memory is not None and snapshot.processes


def test_json_has_the_documented_keys() -> None:
    sampler = Sampler()
    sampler.sample()
    data = json.loads(sampler.sample().to_json())
    assert data["schema"] == SCHEMA
    assert isinstance(data["time"], float)
    core = data["cpu"]["cores"][0]
    assert "percent" in core and "numa_node" in core
    assert data["memory"]["total_bytes"] > 0 and data["memory"]["available_bytes"] > 0
    assert isinstance(data["numa"]["nodes"][0]["cpus"], list)
    assert all("kind" in d for d in data["disks"])
    assert all(isinstance(p["pid"], int) for p in data["processes"])
    assert isinstance(data["gpus"], list) and isinstance(data["errors"], list)


def test_history_is_bounded() -> None:
    sampler = Sampler(history_length=3)
    for _ in range(6):
        sampler.sample()
    assert len(sampler.history.series("mem")) == 3
