"""The model's closed words (`Literal` enums: a disk's kind, a job's status, the job's AMP mode) come back from JSON
as they were written; a word outside the set is a wrong shape in a recording, and N/A in the job's telemetry."""

from __future__ import annotations

import typing

import pytest

from hwtop.model.serial import decode, decode_record, lenient_record
from hwtop.model.snapshot import DiskKind, DiskSnapshot
from hwtop.model.workload import Amp, JobConfig


def test_every_word_of_a_literal_decodes_as_itself() -> None:
    for kind in typing.get_args(DiskKind):
        assert decode(DiskKind, kind) == kind
    for amp in typing.get_args(Amp):
        assert decode(Amp | None, amp) == amp


def test_a_word_outside_the_set_is_a_wrong_shape() -> None:
    disk = {"name": "sda", "kind": "floppy", "read_bytes_per_s": None, "write_bytes_per_s": None, "read_iops": None,
            "write_iops": None, "busy_percent": None}
    with pytest.raises(ValueError, match=r"Invalid enum value 'floppy' - at `\$.kind`"):
        decode_record(DiskSnapshot, disk)


def test_the_jobs_telemetry_keeps_what_it_knows() -> None:
    config = lenient_record(JobConfig, {"amp": "fp8", "backend": "nccl", "device": "tpu", "model": "resnet50"})
    assert config == JobConfig(backend="nccl", model="resnet50")  # fp8 and tpu: N/A, not a wrong word


def test_a_process_owner_comes_back_from_a_recording() -> None:
    """An Owner's kind is a Literal of its own module (model/owner.py): the decoder finds it there."""
    import json

    from msgspec.structs import replace

    from hwtop.model.owner import Owner
    from hwtop.model.serial import snapshot_from_dict
    from tests.factories import host_snapshot

    base = host_snapshot()
    owned = replace(base.processes[0], owner=Owner("pod", pod_uid="1234abcd", qos="burstable"))
    snapshot = replace(base, processes=(owned, *base.processes[1:]))
    assert snapshot_from_dict(json.loads(snapshot.to_json())) == snapshot
