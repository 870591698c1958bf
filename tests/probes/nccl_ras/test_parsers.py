"""The two answer formats, property by property: whatever arrives, a parser returns a reply or raises RasError
(one line); what the stand-in writes from NCCL's layouts comes back as written."""

from __future__ import annotations

import json
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hwtop.probes.nccl_ras.client import RasError, RawReply
from hwtop.probes.nccl_ras.parse_json import parse_events, parse_json
from hwtop.probes.nccl_ras.parse_text import parse_text
from hwtop.probes.nccl_ras.watch import parse_reply
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
@pytest.mark.slow  # over the fast suite's minute on two cores (--durations)
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
@pytest.mark.slow  # over the fast suite's minute on two cores (--durations)
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


# ---- hostile answers: nothing but RasError, of one line, whatever arrives (issue 52's review: int() of a count past
# 4,300 digits raised ValueError and ended the query thread) ----
HEADS = ["", "NCCL version 2.27.5 compiled with CUDA 12.4\n", "NCCL version 2.24.3\nCommunicators... (0.1s)\n"]
numbers = st.one_of(st.integers(0, 2**70).map(str), st.integers(4301, 5000).map(lambda n: "9" * n), st.just(""),
                    st.just("-1"))
TEXT_LINES = [
    "    {0}         {0}         {0}       {0}        {0}        {0}   RUNNING  INCOMPLETE,MISMATCH",
    "#{0}-{0} (cf264af53edbe986) INCOMPLETE", "#{0}-{0} ({0}) MISMATCH", "  Missing communicator data from {0} rank",
    "  The missing ranks: {0},{0}", "  {0} ranks have launched up to operation {0}",
    "  Rank {0} has launched up to operation {0} -- GPU {0} (NVML {0}) managed by process {0} on node h",
    "  Rank {0} -- GPU {0} managed by process {0} on node 10.0.0.{0}", "  Rank {0} has status UNKNOWN",
    "  The unknown ranks: {0}", "  Process {0} on node h managing GPUs {0},,{0}", "  Encountered {0} communication "
    "timeouts", "  {0} job processes are considered dead", "  Missing communicator data from {0} job processes",
    "  Communicator ranks have different AllReduce operation counts", "  Rank {0} reported Internal error -- "
    "[process information not found]", "Errors", "Warnings", "DEAD", "INCOMPLETE", "Communicators... ({0}s)"]
text_lines = st.one_of(st.builds(str.format, st.sampled_from(TEXT_LINES), numbers),
                       st.binary(max_size=60).map(lambda b: b.decode("utf-8", "replace")))


def one_line_or_reply(parse, *args) -> None:
    try:
        parse(*args)
    except RasError as error:
        assert "\n" not in str(error) and str(error)


@settings(max_examples=150, deadline=None)
@given(st.sampled_from(HEADS), st.binary(max_size=2000))
def test_any_bytes_as_a_text_answer(head: str, data: bytes) -> None:
    one_line_or_reply(parse_reply, RawReply("text", head + data.decode("utf-8", "replace"), 2))


@settings(max_examples=100, deadline=None)
@given(st.sampled_from(HEADS), st.lists(text_lines, max_size=40))
@pytest.mark.slow  # over the fast suite's minute on two cores (--durations)
def test_any_lines_of_nccls_forms_as_a_text_answer(head: str, lines: list[str]) -> None:
    one_line_or_reply(parse_reply, RawReply("text", head + "\n".join(["Errors"] + lines), 2))


FIELDS = ["communicators", "nccl_version", "ras", "timeouts_count", "collection_time_sec", "hash", "secondary_hash",
          "size", "ranks", "missing_ranks", "rank", "host", "pid", "cuda_dev", "nvml_dev", "status", "init_state",
          "async_error", "collective_counts", "AllReduce", "event", "timestamp", "peer", "cuda_devs", "nvml_devs",
          "addr", "details", "group"]
scalars = st.one_of(st.none(), st.booleans(), st.integers(-2**70, 2**70), st.floats(allow_nan=False), st.text(
    max_size=12), st.integers(4301, 5000).map(lambda n: f"BIG{n}"))  # a count of n digits, written by dumps
json_ish = st.recursive(scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.dictionaries(st.one_of(st.sampled_from(FIELDS), st.text(max_size=6)), inner,
                                                 max_size=4)), max_leaves=12)
documents = st.dictionaries(st.sampled_from(FIELDS), json_ish, max_size=4)


def dumps(value: object) -> str:
    """JSON as NCCL indents it, a "BIGn" string written as a number of n digits (past Python's int() limit)."""
    return re.sub(r'"BIG(\d+)"', lambda m: "9" * int(m[1]), json.dumps(value, indent=2))


@settings(max_examples=60, deadline=None)
@given(documents)
@pytest.mark.slow  # over the fast suite's minute on two cores (--durations)
def test_any_json_ish_as_a_json_answer(document: dict) -> None:
    one_line_or_reply(parse_reply, RawReply("json", dumps(document), 2))


@settings(max_examples=40, deadline=None)
@given(st.lists(documents, max_size=2), st.lists(text_lines, max_size=3), st.sampled_from(["", "[2026] PEER_DEAD: "]))
@pytest.mark.slow  # over the fast suite's minute on two cores (--durations)
def test_any_json_ish_or_line_as_monitor_events(documents: list[dict], lines: list[str], prefix: str) -> None:
    for data in ("".join(dumps(d) + "\n" for d in documents), "".join(prefix + line + "\n" for line in lines)):
        try:
            events, rest, lost = parse_events(data.encode())
        except RasError as error:
            assert "\n" not in str(error)
            continue
        assert all("\n" not in line for line in lost) and len(events) + len(lost) <= max(len(documents), len(lines))


def test_a_count_past_pythons_digits_and_an_empty_gpu_are_one_line() -> None:
    count = "9" * 5000
    with pytest.raises(RasError, match=r"^unreadable text answer \(ValueError: Exceeds the limit \(4300 digits\)"):
        parse_reply(RawReply("text", f"NCCL version 2.27.5\nJob summary\n  Encountered {count} communication "
                                     "timeouts\n", 2))
    events, rest, lost = parse_events(b"[2026-12-06 20:27:00] PEER_DEAD: Process 4006 on node h managing GPUs 1,,2\n"
                                      b"[2026-12-06 20:27:01] PEER_DEAD: Process 4007 on node h managing GPU 3\n")
    assert [(e.pid, e.gpus) for e in events] == [(4007, (3,))] and rest == b""
    assert lost == ["an event lost, unreadable (ValueError: invalid literal for int() with base 10: '')"]
