"""`hwtop export --pid/--job`: the focused job's ranks as counters, parsed back with prometheus-client's parser;
labels bounded (phases a fixed set) and hostile label values escaped; the command refuses a job it cannot
focus in one line."""

from __future__ import annotations

import subprocess
import sys

import pytest
from msgspec.structs import replace
from prometheus_client.parser import text_string_to_metric_families

from hwtop.exporter.metrics import families
from hwtop.exporter.server import Latest, SnapshotCollector
from hwtop.exporter.text import render
from hwtop.model.frame import Frame
from hwtop.model.job import JobSnapshot, RankFigures
from hwtop.probes.stack_classify import CATEGORIES
from tests.demo.played import EPOCH, played
from tests.factories import host_snapshot

HWTOP = [sys.executable, "-m", "hwtop"]


def job_with(*ranks: RankFigures, label: str = "job /train.py/") -> JobSnapshot:
    return JobSnapshot(label, (100,), "running", (), 50.0, 1 << 30, ranks=ranks)


def page(job: JobSnapshot | None, hostname: str | None = "node-1", job_name: str | None = None) -> dict:
    snapshot = replace(host_snapshot(), job=job)
    text = render(families(snapshot, (), "test", hostname, job_name)).decode()
    out: dict = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            out.setdefault(sample.name, []).append((sample.labels, sample.value))
    return out


RANK0 = RankFigures(0, "box", pid=101, phase_seconds=(("compute", 12.5), ("collective", 30.0)), steps=40,
                    seen_at=1000.0, samples=300, site="train.py:41 augment")
RANK1 = RankFigures(1, "box", pid=102, phase_seconds=(("other", 40.0), ("compute", 2.5)), seen_at=1001.5,
                    samples=300)


def test_each_rank_and_phase_is_a_counter_with_job_rank_host_and_phase():
    series = page(job_with(RANK0, RANK1), job_name="train")
    seconds = {(s["job_name"], s["rank"], s["Hostname"], s["phase"]): v
               for s, v in series["hwtop_job_rank_seconds_total"]}
    assert seconds == {("train", "0", "node-1", "compute"): 12.5, ("train", "0", "node-1", "collective"): 30.0,
                       ("train", "1", "node-1", "other"): 40.0, ("train", "1", "node-1", "compute"): 2.5}
    assert series["hwtop_job_rank_steps_total"] == [({"job_name": "train", "rank": "0", "Hostname": "node-1"}, 40)]
    assert sorted(v for _, v in series["hwtop_job_rank_last_seen_timestamp_seconds"]) == [1000.0, 1001.5]
    assert series["hwtop_job_info"] == [({"job_name": "train", "Hostname": "node-1", "status": "running"}, 1)]
    info = {s["rank"]: s for s, _ in series["hwtop_job_rank_info"]}
    assert info["0"]["pid"] == "101" and info["0"]["site"] == "train.py:41 augment" and info["1"]["site"] == ""


def test_the_types_are_counters_and_the_job_label_defaults_to_the_jobs_own():
    text = render(families(replace(host_snapshot(), job=job_with(RANK0)), (), "test", "n")).decode()
    assert "# TYPE hwtop_job_rank_seconds_total counter" in text
    assert "# TYPE hwtop_job_rank_steps_total counter" in text
    assert 'job_name="job /train.py/"' in text


def test_no_job_no_job_series():
    series = page(None)
    assert not [name for name in series if name.startswith("hwtop_job")]


def test_phases_outside_the_fixed_set_are_not_exported():
    odd = replace(RANK0, phase_seconds=(("compute", 1.0), ("x" * 300, 5.0), ("collective\n", 2.0)))
    phases = {s["phase"] for s, _ in page(job_with(odd))["hwtop_job_rank_seconds_total"]}
    assert phases == {"compute"} and phases <= set(CATEGORIES)


def test_hostile_job_and_host_names_cannot_forge_series():
    evil = 'x"} 1\nhwtop_job_rank_seconds_total{rank="9'
    series = page(job_with(RANK0), hostname=evil, job_name=evil)
    labels = [s for s, _ in series["hwtop_job_rank_seconds_total"]]
    assert {s["rank"] for s in labels} == {"0"}
    assert all(s["job_name"] == evil and s["Hostname"] == evil for s in labels)


@pytest.mark.slow  # over the fast suite's minute on two cores (--durations)
def test_export_refuses_a_job_it_cannot_focus_in_one_line():
    done = subprocess.run([*HWTOP, "export", "--job", "^no-such-job-anywhere-x9$", "--listen", "127.0.0.1:1"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and "hwtop: error:" in done.stderr, done.stderr
    done = subprocess.run([*HWTOP, "export", "--job-name", "train"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "--job-name" in done.stderr and done.stderr.count("\n") == 1, done.stderr


def test_nccl_ranks_of_every_node_as_counters_states_and_missing():
    from hwtop.model.ras import NcclView

    here = replace(RANK0, collectives=(("AllReduce", 6650), ("Broadcast", 1)), lag=0, nccl_state="RUNNING", gpu=0)
    late = RankFigures(5, "10.0.0.3", pid=4055, gpu=1, collectives=(("AllReduce", 6649),), lag=1,
                       nccl_state="RUNNING", nccl_only=True)
    gone = RankFigures(6, 'evil"\n', pid=4056, gpu=2, nccl_state="DEAD", nccl_only=True)
    job = replace(job_with(here, late, gone), nccl=NcclView("localhost:28028", "test"))
    series = page(job, job_name="train")
    counts = {(s["rank"], s["Hostname"], s["op"]): v for s, v in series["hwtop_nccl_rank_collectives_total"]}
    assert counts == {("0", "box", "AllReduce"): 6650, ("0", "box", "Broadcast"): 1,
                      ("5", "10.0.0.3", "AllReduce"): 6649}
    states = {s["rank"]: (s["state"], s["Hostname"], s["pid"], s["gpu"]) for s, _ in series["hwtop_nccl_rank_state"]}
    assert states["6"] == ("DEAD", 'evil"\n', "4056", "2") and states["5"] == ("RUNNING", "10.0.0.3", "4055", "1")
    assert {s["state"]: v for s, v in series["hwtop_nccl_missing_ranks"]} == {"UNRESPONSIVE": 0, "DEAD": 1}
    assert {s["rank"]: v for s, v in series["hwtop_nccl_rank_lag"]} == {"0": 0, "5": 1}
    assert {s["rank"] for s, _ in series["hwtop_job_rank_info"]} == {"0"}  # other hosts' ranks: theirs to report


def test_no_nccl_view_no_nccl_series():
    assert not any(name.startswith("hwtop_nccl_") for name in page(job_with(RANK0, RANK1)))


def test_each_rank_is_in_its_verdicts_state_one_series_a_rank():
    """hwtop_job_rank_state (the name agreed with the alert rules): the same state doctor and the job view give."""
    waiting = replace(RANK0, shares=(("collective", 1.0),), site="train.py:63 main")
    odd = replace(RANK1, shares=(("other", 1.0),), site="train.py:37 next_batch")
    series = page(job_with(waiting, odd), job_name="train")
    states = {s["rank"]: s["state"] for s, v in series["hwtop_job_rank_state"] if v == 1}
    assert states == {"0": "inside-collective", "1": "before-collective"}
    assert len(series["hwtop_job_rank_state"]) == 2
    about = {s["rank"]: s for s, _ in series["hwtop_job_rank_verdict_info"]}
    assert (about["1"]["blamed"], about["1"]["site"]) == ("true", "train.py:37 next_batch")
    assert about["0"]["blamed"] == "false"


def scraped(frame: Frame) -> dict[str, str]:
    """rank -> its hwtop_job_rank_state, as the exporter's collector serves `frame` (its series at 1)."""
    latest = Latest()
    latest.put(frame)
    text = render(SnapshotCollector(latest, "test", "node-1").collect()).decode()
    return {s.labels["rank"]: s.labels["state"] for f in text_string_to_metric_families(text)
            if f.name == "hwtop_job_rank_state" for s in f.samples if s.value == 1}


def test_the_scraped_rank_state_is_the_frames_the_findings_read():
    """One voice: on the nccl-hang story the exporter says of rank 5 what collective-hang says at 66 s, and what
    rank-straggler says at 36 s, where its own judgement of the snapshot alone (no frame) said before-collective."""
    frames = {round(f.time - EPOCH): f for f in played("nccl-hang", 70.0)}
    hang, early = frames[66], frames[36]
    assert hang.verdicts is not None and early.verdicts is not None
    states = scraped(hang)
    assert states["5"] == "before-collective" and set(states.values()) == {"before-collective", "inside-collective"}
    assert states == {str(v.rank): v.state for v in hang.verdicts.ranks if str(v.rank) in states}
    assert any(f.id == "collective-hang" and f.title.startswith("Rank 5 ") for f in hang.findings)
    slow = early.verdicts.of(5)
    assert slow is not None and scraped(early)["5"] == "slow" == slow.state
    assert any(f.id == "rank-straggler" and "Rank 5" in f.title for f in early.findings)
    alone = {s["rank"]: s["state"] for s, _ in page(early.snapshot.job)["hwtop_job_rank_state"]}
    assert alone["5"] == "before-collective"  # the fallback, without the frame's verdicts: what it would have said
