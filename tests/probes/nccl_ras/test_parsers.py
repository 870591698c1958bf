"""The two answer formats, property by property: whatever arrives, a parser returns a reply or raises RasError
(one line); what the stand-in writes from NCCL's layouts comes back as written."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from hwtop.probes.nccl_ras.client import RasError
from hwtop.probes.nccl_ras.parse_json import parse_json
from hwtop.probes.nccl_ras.parse_text import parse_text
from tests.nccl_ras_standin import OPS, StandComm, StandRank, json_reply, text_reply

hosts = st.text(st.characters(blacklist_categories=("Cs", "Cc"), blacklist_characters='"\\'), min_size=1,
                max_size=20).filter(lambda h: h.strip() == h)
counts = st.dictionaries(st.sampled_from(OPS), st.integers(0, 2**40), min_size=len(OPS), max_size=len(OPS))


@st.composite
def comms(draw: st.DrawFn) -> list[StandComm]:
    size = draw(st.integers(1, 12))
    ranks = [StandRank(i, draw(hosts), draw(st.integers(1, 2**22)), draw(st.integers(0, 7)), draw(counts),
                       draw(st.sampled_from([0, 0, 7, 6])), draw(st.sampled_from([0, 0, 2])),
                       draw(st.booleans()), draw(st.booleans()), draw(st.booleans()))
             for i in range(size)]
    return [StandComm(draw(st.integers(1, 2**63)), ranks)]


@settings(max_examples=60, deadline=None)
@given(comms())
def test_json_round_trip(made: list[StandComm]) -> None:
    reply = parse_json(json_reply(made))
    comm = reply.comms[0]
    assert comm.size == len(made[0].ranks) and comm.hash == f"0x{made[0].hash:x}"
    by_rank = {r.rank: r for r in comm.ranks}
    for want in made[0].ranks:
        got = by_rank[want.rank]
        assert (got.host, got.pid, got.nvml_dev, got.missing) == (want.host, want.pid, want.gpu, want.missing)
        if want.missing:
            assert got.dead == want.dead and got.unresponsive
        else:
            assert dict(got.counts) == want.counts
            assert (got.init_state, got.async_error, got.abort_flag) == (want.init_state, want.async_error,
                                                                         want.abort)


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=400))
def test_json_never_crashes(text: str) -> None:
    try:
        parse_json(text)
    except RasError as error:
        assert "\n" not in str(error)


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=600), st.sampled_from(["", "NCCL version 2.26.2\n", "Communicators... (0.1s)\n"]))
def test_text_never_crashes(text: str, head: str) -> None:
    try:
        parse_text(head + text)
    except RasError as error:
        assert "\n" not in str(error)


@settings(max_examples=60, deadline=None)
@given(st.integers(4, 40), st.data())
def test_text_names_the_outliers(size: int, data: st.DataObject) -> None:
    late = data.draw(st.sets(st.integers(0, size - 1), min_size=1, max_size=max(1, min(10, size // 4))))
    host = data.draw(hosts.filter(lambda h: "\n" not in h and "\r" not in h))
    ranks = [StandRank(i, f"{host}{i}", 100 + i, i % 8, {"AllReduce": 50 - (i in late), "Broadcast": 3})
             for i in range(size)]
    reply = parse_text(text_reply([StandComm(0xABC, ranks)]))
    comm = reply.comms[0]
    assert comm.size == size
    named = {r.rank: r for r in comm.ranks}
    if len(late) < size - len(late):  # the late ones are the outliers NCCL names
        assert dict(comm.rest_counts)["AllReduce"] == 50
        for rank in late:
            assert named[rank].count("AllReduce") == 49 and named[rank].pid == 100 + rank
            assert named[rank].host == f"{host}{rank}"


def test_text_missing_and_dead() -> None:
    ranks = [StandRank(i, f"10.0.0.{i}", 10 + i, 0, {"AllReduce": 7}) for i in range(8)]
    ranks[6].missing = ranks[6].dead = True
    ranks[2].missing = True
    reply = parse_text(text_reply([StandComm(0xABC, ranks)]))
    by_rank = {r.rank: r for r in reply.comms[0].ranks}
    assert by_rank[6].dead and by_rank[6].state == "DEAD"
    assert by_rank[2].unresponsive and not by_rank[2].dead and by_rank[2].state == "UNRESPONSIVE"
    assert [p.pid for p in reply.processes if p.dead] == [16]


def test_docs_sample_text() -> None:
    """The excerpts of ras.rst, as printed there."""
    text = """NCCL version 2.26.2 compiled with CUDA 12.4
CUDA runtime version 12040, driver version 12040

Communicators... (2.05s)
=============

Group     Comms     Nodes     Ranks     Ranks     Ranks    Status  Errors
    #  in group  per comm  per node  per comm  in group
    0         1         4       7-8        32        32   RUNNING  INCOMPLETE,MISMATCH

Errors
======

DEAD
  1 job process is considered dead (unreachable via the RAS network)
  Process 3487984 on node 172.16.64.213 managing GPU 5

#0-0 (cf264af53edbe986) INCOMPLETE
  Missing communicator data from 1 rank
  The missing rank: 21

Warnings
========

TIMEOUT
  Encountered 2 communication timeouts while gathering communicator data

#0-0 (cf264af53edbe986) MISMATCH
  Communicator ranks have different collective operation counts
  26 ranks have launched up to operation 6650
  5 ranks have launched up to operation 6649
  Rank 0 -- GPU 0 managed by process 483072 on node 172.16.64.210
  Rank 2 -- GPU 2 (NVML 6) managed by process 483074 on node 172.16.64.210
"""
    reply = parse_text(text)
    comm = reply.comms[0]
    assert comm.size == 32 and comm.status == "RUNNING" and reply.timeouts == 2 and reply.nccl_version == "2.26.2"
    by_rank = {r.rank: r for r in comm.ranks}
    assert by_rank[21].missing and by_rank[2].nvml_dev == 6 and by_rank[2].cuda_dev == 2
    assert by_rank[0].count("collective") == 6649 and dict(comm.rest_counts) == {"collective": 6650}
    assert reply.processes[0].pid == 3487984 and reply.processes[0].dead


def test_text_of_a_healthy_job_lists_its_communicators_and_says_no_stop() -> None:
    from hwtop.advice.nccl_ranks import stopped
    from hwtop.advice.thresholds import Thresholds
    from hwtop.model.ras import NcclView
    from hwtop.probes.nccl_ras.track import Tracker

    ranks = [StandRank(i, "10.0.0.1", 10 + i, i, {"AllReduce": 7}) for i in range(4)]
    reply = parse_text(text_reply([StandComm(0xABC, ranks)]))
    assert [(c.hash, c.size, c.status, c.errors) for c in reply.comms] == [("group 0", 4, "RUNNING", "OK")]
    tracker = Tracker()
    comms = ()
    for n in range(10):
        comms = tracker.update(reply, 100.0 * n)
    assert stopped(NcclView("x", "y", comms, 10, 900.0), Thresholds()) is None  # no counts: nothing to say
