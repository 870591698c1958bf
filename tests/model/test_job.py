"""The job's telemetry becomes typed records (JobConfig, OomEvent, ...): a field of the wrong type is left N/A,
never passed on to a rule or a widget, and recordings made before the records were typed still replay."""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hwtop.model.serial import lenient_record, snapshot_from_dict
from hwtop.model.workload import AmpSummary, JobConfig, NonfiniteEvent, OomEvent
from tests.factories import host_snapshot


def test_a_started_record_keeps_the_fields_of_the_declared_type_only():
    record = {"event": "started", "rank": 0, "pid": 4242, "device": "cuda", "batch_size": "64", "num_workers": 4,
              "pin_memory": 1, "lr": 0.001, "transform_cost_ms": 8, "grad_accum": True, "from_the_future": [1]}
    config = lenient_record(JobConfig, record)
    assert config == JobConfig(device="cuda", num_workers=4, lr=0.001, transform_cost_ms=8.0)


def test_an_oom_record_with_a_nan_batch_is_read_without_it():
    oom = lenient_record(OomEvent, {"rank": 1, "batch_size": math.nan, "largest_fit": 32, "message": "CUDA out of "
                                       "memory", "time": 12.5})
    assert oom == OomEvent(rank=1, batch_size=None, largest_fit=32, message="CUDA out of memory", time=12.5)


json_values = (st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8)
               | st.lists(st.integers(), max_size=2) | st.dictionaries(st.text(max_size=3), st.integers(), max_size=2))


@given(st.dictionaries(st.sampled_from(["rank", "step", "time", "skipped", "stopped", "other"]), json_values))
@pytest.mark.slow  # over the fast suite's minute on two cores (--durations)
def test_any_record_gives_a_typed_event(record):
    event = lenient_record(NonfiniteEvent, record)
    assert event.rank is None or type(event.rank) is int
    assert event.time is None or isinstance(event.time, float)
    assert type(event.skipped) is bool and type(event.stopped) is bool


def test_a_recording_made_with_untyped_job_records_replays_into_the_typed_ones():
    """Recordings of 0.2.0 stored the records as the job wrote them, keys the records do not declare included."""
    data = json.loads(host_snapshot().to_json())
    data["workload"] = {"scenario": "oom-ramp", "status": "running", "exit_code": None, "ranks": [],
                        "last_event": None,
                        "config": {"device": "cpu", "model": "mlp", "num_workers": 2, "world_size": 2, "port": 1},
                        "summary": {"memory_saving_fraction": None, "speedup": 1.4, "memory_metric": "none on CPU"},
                        "oom_count": 1, "last_oom": {"rank": 0, "batch_size": 64, "largest_fit": 32, "time": 3.0},
                        "nonfinite_steps": 1,
                        "last_nonfinite": {"rank": 1, "step": 7, "time": 2.0, "skipped": True, "stopped": False}}
    workload = snapshot_from_dict(data).workload
    assert workload is not None and workload.config == JobConfig(device="cpu", model="mlp", num_workers=2,
                                                                 world_size=2)
    assert workload.summary is not None and workload.summary.speedup == 1.4
    assert workload.last_oom == OomEvent(rank=0, batch_size=64, largest_fit=32, time=3.0)
    assert workload.last_nonfinite == NonfiniteEvent(rank=1, step=7, time=2.0, skipped=True)


def test_a_nan_or_infinite_figure_is_left_out():
    summary = lenient_record(AmpSummary, {"speedup": math.nan, "memory_saving_fraction": math.inf,
                                             "memory_metric": "cuda_peak_bytes"})
    assert summary == AmpSummary(memory_metric="cuda_peak_bytes")
