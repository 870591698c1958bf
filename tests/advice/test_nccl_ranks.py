"""NCCL RAS judgements on answers folded in by the tracker, as the watch folds them: hung rank, every rank
stopped, straggler against a balanced job, lost ranks and NCCL errors; and the rules that say them."""

from __future__ import annotations

import msgspec.structs

from hwtop.advice.nccl_ranks import errors, hang, missing, stopped, straggler
from hwtop.advice.rules.collective import collective_hang
from hwtop.advice.rules.nccl_ras import nccl_error, nccl_rank_lost, nccl_stopped
from hwtop.advice.rules.straggler import rank_straggler
from hwtop.advice.thresholds import Thresholds
from hwtop.advice.window import Window
from hwtop.model.job import JobSnapshot, RankFigures
from hwtop.model.ras import NcclView
from hwtop.probes.nccl_ras.join import Here, join_ranks
from hwtop.probes.nccl_ras.parse_json import parse_json
from hwtop.probes.nccl_ras.track import Tracker
from tests.factories import host_snapshot
from tests.nccl_ras_standin import StandComm, StandRank, json_reply

T = Thresholds()


def ranks_at(counts: list[int]) -> list[StandComm]:
    return [StandComm(0xAB, [StandRank(i, f"10.0.0.{1 + i // 2}", 4050 + i, i % 2, {"AllReduce": c})
                             for i, c in enumerate(counts)])]


def view_of(answers: list[list[StandComm]], every_s: float = 10.0) -> NcclView:
    tracker, comms = Tracker(), ()
    for n, answer in enumerate(answers):
        comms = tracker.update(parse_json(json_reply(answer)), 1000.0 + n * every_s)
    return NcclView("127.0.0.1:1", "test", comms, len(answers), 1000.0 + (len(answers) - 1) * every_s, "json")


def hung_counts() -> list[int]:
    return [6650] * 5 + [6649] + [6650] * 2


def test_hung_rank_named_after_30_s() -> None:
    assert hang(view_of([ranks_at(hung_counts())] * 3), T) is None  # 20 s: not yet
    found = hang(view_of([ranks_at(hung_counts())] * 4), T)
    assert found is not None
    assert found.sentence == ("rank 5 (pid 4055 on 10.0.0.3, GPU 1) has not launched AllReduce #6650, which the "
                              "other 7 ranks wait in")


def test_moving_counts_are_no_hang() -> None:
    answers = [ranks_at([c + n for c in hung_counts()]) for n in range(6)]
    assert hang(view_of(answers), T) is None and stopped(view_of(answers), T) is None


def test_every_rank_stopped() -> None:
    still = [ranks_at([100] * 8)] * 8
    found = stopped(view_of(still), T)
    assert found is not None and found[1] == 70.0
    assert hang(view_of(still), T) is None


def test_straggler_behind_in_most_queries() -> None:
    answers = []
    for n in range(9):
        counts = [100 + n] * 8
        if n not in (2, 6):
            counts[3] -= 1  # rank 3 behind in 7 of 9
        if n == 4:
            counts[6] -= 1  # another, once
        answers.append(ranks_at(counts))
    found = straggler(view_of(answers), T)
    assert found is not None and found.rank.rank == 3 and (found.behind, found.window, found.others_most) == (7, 9, 1)


def test_balanced_job_stays_quiet() -> None:
    answers = []
    for n in range(12):
        counts = [100 + n] * 8
        counts[n % 8] -= 1  # whoever is caught behind changes from query to query
        counts[(n * 3 + 1) % 8] -= 1
        answers.append(ranks_at(counts))
    view = view_of(answers)
    assert straggler(view, T) is None and hang(view, T) is None


def test_too_few_queries_for_a_straggler() -> None:
    answers = [ranks_at([100 + n if i != 3 else 99 + n for i in range(8)]) for n in range(5)]
    assert straggler(view_of(answers), T) is None


def test_lost_and_errors() -> None:
    comms = ranks_at([10] * 8)
    comms[0].ranks[6].missing = comms[0].ranks[6].dead = True
    comms[0].ranks[2].missing = True
    comms[0].ranks[1].async_error = 6
    comms[0].ranks[4].abort = True
    view = view_of([comms, comms])
    lost = missing(view)
    assert [(r.rank, r.dead, at) for _, r, at in lost] == [(2, False, 1000.0), (6, True, 1000.0)]
    assert [(r.rank, what) for r, what in errors(view)] == [
        (1, "asynchronous error ncclRemoteError"), (4, "its communicator was aborted (abort_flag)")]


def job_with(view: NcclView, local: tuple[RankFigures, ...] = ()) -> JobSnapshot:
    job = JobSnapshot("job", (1,), "running", (), None, 0, ranks=local)
    return msgspec.structs.replace(job, nccl=view, ranks=join_ranks(local, view, Here(frozenset())))


def window_of(job: JobSnapshot) -> Window:
    return Window((msgspec.structs.replace(host_snapshot(), job=job),))


def test_rules_say_it() -> None:
    hung = window_of(job_with(view_of([ranks_at(hung_counts())] * 4)))
    [finding] = collective_hang(hung, T)
    assert finding.severity == "critical"
    assert finding.title == "Rank 5 on 10.0.0.3 never reached the collective the others wait in"
    assert finding.evidence[0].startswith("NCCL RAS: rank 5 (pid 4055 on 10.0.0.3, GPU 1) has not launched")
    assert finding.pids == ()  # a remote pid is not this host's
    comms = ranks_at([10] * 8)
    comms[0].ranks[6].missing = comms[0].ranks[6].dead = True
    [lost] = nccl_rank_lost(window_of(job_with(view_of([comms] * 2))), T)
    assert lost.severity == "critical" and "rank 6 (pid 4056 on 10.0.0.4, GPU 0)" in lost.title
    assert list(nccl_error(hung, T)) == [] and list(nccl_stopped(hung, T)) == []
    still = window_of(job_with(view_of([ranks_at([10] * 8)] * 8)))
    [info] = nccl_stopped(still, T)
    assert info.severity == "info"


def test_straggler_rule_merges_with_stacks() -> None:
    answers = [ranks_at([100 + n - (i == 1) for i in range(8)]) for n in range(8)]
    view = view_of(answers)
    local = (RankFigures(0, "here", 4050, samples=40, shares=(("collective", 0.9), ("compute", 0.1))),
             RankFigures(1, "here", 4051, samples=40, shares=(("collective", 0.05), ("compute", 0.95))))
    job = job_with(view, local)
    job = msgspec.structs.replace(job, processes=())
    findings = list(rank_straggler(window_of(job), T))
    assert len(findings) == 1 and findings[0].id == "rank-straggler"
    assert any(line.startswith("NCCL RAS: rank 1 (pid 4051") for line in findings[0].evidence)


def test_join_rows() -> None:
    view = view_of([ranks_at(hung_counts())])
    local = (RankFigures(0, "node-a", 4050, samples=30),)
    rows = join_ranks(local, view, Here(frozenset({"10.0.0.1"}), {4050: 4050, 4051: 4051}))
    assert [r.rank for r in rows] == list(range(8))
    assert rows[0].host == "node-a" and rows[0].samples == 30 and rows[0].nccl_state == "RUNNING"
    assert rows[1].host == "node-a" and not rows[1].nccl_only  # a local pid without stacks yet
    assert rows[5].nccl_only and rows[5].host == "10.0.0.3" and rows[5].lag == 1 and rows[5].gpu == 1


def test_a_stuck_rank_is_no_straggler() -> None:
    answers = [ranks_at(hung_counts())] * 8  # behind in every answer, but nothing moves: collective-hang's
    assert straggler(view_of(answers), T) is None and hang(view_of(answers), T) is not None


def test_text_hang_past_ten_ranks_counts_the_unnamed() -> None:
    """NCCL's own 2.27.5 text for 64 ranks: 49 at 6650, 14 counted at 6649 without names, rank 40 at 6648."""
    from hwtop.probes.nccl_ras.parse_text import parse_text
    from tests.nccl_ras_scenarios import fixture

    reply = parse_text(fixture("2.27.5", "many.txt"))
    tracker, comms = Tracker(), ()
    for n in range(4):
        comms = tracker.update(reply, 1000.0 + 10 * n)
    found = hang(NcclView("x", "y", comms, 4, 1030.0, "text"), T)
    assert found is not None and [r.rank for r in found.behind] == [40]
    assert (found.unnamed, found.waiting, found.most) == (14, 49, 6650)
    assert found.sentence.startswith("rank 40 (pid 4040 on 10.0.0.6, GPU 0) and 14 ranks NCCL's text counts "
                                     "without naming have not launched AllReduce #6650, which the other 49 ranks")


def test_dead_peers_from_monitor_events() -> None:
    from hwtop.advice.nccl_ranks import dead_peers
    from hwtop.model.ras import RasEvent

    view = NcclView("x", "y", events=(RasEvent("PEER_DEAD", "10.0.0.2", 4006), RasEvent("PEER_DEAD", "10.0.0.3", 9),
                                      RasEvent("PEER_NEW", "10.0.0.3", 9)))
    assert [(e.host, e.pid) for e in dead_peers(view)] == [("10.0.0.2", 4006)]


def test_monitor_dead_peer_is_lost_at_once_and_another_jobs_answer_says_nothing() -> None:
    from hwtop.model.ras import RasEvent

    event = RasEvent("PEER_DEAD", "10.0.0.4", 4056, (0,), "2026-12-06 01:00:00")
    view = NcclView("127.0.0.1:1", "test", events=(event,), policy="NCCL 2.30.7: asked in JSON")
    [lost] = nccl_rank_lost(window_of(job_with(view)), T)
    assert lost.severity == "critical" and lost.title == "NCCL considers the process pid 4056 on 10.0.0.4, GPU 0 dead"
    assert lost.evidence == ("the process pid 4056 on 10.0.0.4, GPU 0: declared dead by NCCL (MONITOR: PEER_DEAD at "
                             "2026-12-06 01:00:00)",)
    comms = ranks_at([10] * 8)
    comms[0].ranks[6].missing = comms[0].ranks[6].dead = True
    foreign = msgspec.structs.replace(view_of([comms] * 2), foreign="another job's")
    assert list(nccl_rank_lost(window_of(job_with(foreign)), T)) == []


def test_another_jobs_answer_judges_nothing() -> None:
    foreign = msgspec.structs.replace(view_of([ranks_at(hung_counts())] * 4), foreign="another job's")
    assert hang(foreign, T) is None and straggler(foreign, T) is None and stopped(foreign, T) is None
    assert missing(foreign) == [] and errors(foreign) == []
