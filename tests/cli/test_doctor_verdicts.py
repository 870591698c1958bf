"""doctor says each rank's verdict as the rules and the job view have it (the frame's, one judgement a tick): its
state in the rank table, worst first, and its state and words in the JSON; before, the table sorted by NCCL's raw
lag and said no state, so a hung job listed the rank behind by its lag alone."""

from __future__ import annotations

import json

import msgspec

from hwtop.cli.doctor.facts import job_facts
from hwtop.cli.doctor.render import rank_lines
from hwtop.demo.story import NCCL_STUCK_RANK
from tests.demo.played import play


def test_the_hung_rank_leads_the_table_as_never_launched_and_the_json_says_the_same_words() -> None:
    frame = play("nccl-hang", 70.0, step=5.0)[-1]
    assert frame.snapshot.job is not None and frame.verdicts is not None
    facts = job_facts(frame.snapshot.job, 70.0, frame.verdicts)
    first = facts.rank_figures[0]
    assert (first.rank, first.state, first.blamed) == (NCCL_STUCK_RANK, "before-collective", True)
    said = frame.verdicts.of(NCCL_STUCK_RANK)
    assert said is not None and first.verdict == said.sentence
    hang = next(f for f in frame.findings if f.id == "collective-hang")
    assert hang.title.startswith(f"Rank {NCCL_STUCK_RANK} ")  # the rank the finding names leads the table
    lines = rank_lines(facts.rank_figures, None)
    assert lines[0].split()[:4] == ["ranks:", "rank", "host", "pid"] and "state" in lines[0]
    row = lines[1].split()
    assert row[0] == str(NCCL_STUCK_RANK) and "never launched" in lines[1]
    assert all("not finished" in line for line in lines[2:9]), lines  # this host's others wait in it
    document = json.loads(msgspec.json.encode(facts))
    assert document["rank_figures"][0]["state"] == "before-collective"


def test_without_verdicts_the_table_says_no_state() -> None:
    frame = play("nccl-hang", 20.0, step=5.0)[-1]
    assert frame.snapshot.job is not None
    facts = job_facts(frame.snapshot.job, 20.0)
    assert all(r.state is None for r in facts.rank_figures)
    assert "state" not in rank_lines(facts.rank_figures, None)[0]
