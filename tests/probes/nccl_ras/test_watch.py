"""The watch: first, do no harm. Against the recording stand-in of each release (intervals shortened by
monkeypatch): a crash-prone release is never sent STATUS while the job makes progress (its ranks waiting in
collectives and its GPUs spinning, as a healthy straggler's are, change nothing) and is asked twice each time it
stops; a JSON release is polled; an unknown one is careful; never while a rank initialises a communicator. Then the
join (a pod's namespace pids and host address, a look-alike remote pid, another job's answer), the judged
communicator, the timeout factor and MONITOR's events, and the old manners (one query at a time, the interval,
the hold after an initialising answer, errors one line each)."""

from __future__ import annotations

import mmap
import os
import socket
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from hwtop.model.job import JobProcess, JobSnapshot, RankFigures, RankStacks, Stillness
from hwtop.probes.nccl_ras import watch as watch_module
from hwtop.probes.nccl_ras.client import Address, RasError, RawReply
from hwtop.probes.nccl_ras.versions import parse_version, policy, version_of_library
from hwtop.probes.nccl_ras.watch import RasWatch, maps_libnccl, namespace_pid
from tests.nccl_ras_scenarios import healthy, pod, tp
from tests.nccl_ras_standin import RasStandIn, StandComm, StandRank, json_reply

HERE = frozenset({"10.0.0.1"})


def process(pid: int, env: tuple[tuple[str, str], ...] = (), rank: int | None = 0) -> JobProcess:
    return JobProcess(pid, 1, "python", "python train.py", f"rank {rank}", rank, 0, "S", 1.0, 1, 1, None,
                      nccl_env=env)


def stacks(pid: int, rank: int, collective: float, site: str = "train.py:40 step",
           still_s: float | None = None) -> RankStacks:
    still = None if still_s is None else Stillness(still_s, 40, "ncclKernelWait", "train.py:40 step", "collective")
    return RankStacks(pid, rank, 40, 10.0, (("collective", collective), ("compute", 1 - collective)),
                      (("compute", site),), still=still)


def job(*processes: JobProcess, waits: float = 0.1, site: str = "train.py:40 step", steps: int | None = None,
        still_s: float | None = None) -> JobSnapshot:
    """`steps`: the job's steps where its telemetry gives them; `still_s`: every rank's main thread on one stack
    that long (None: its stack moves)."""
    ranked = [p for p in processes if p.rank is not None]
    ranks = () if steps is None else tuple(RankFigures(p.rank or 0, "node-a", p.pid, steps=steps) for p in ranked)
    return JobSnapshot("job", (1,), "running", processes, None, 0, ranks=ranks,
                       stacks=tuple(stacks(p.pid, p.rank or 0, waits, site, still_s) for p in ranked))


def fake_proc(tmp: Path, pid: int, library: str, ns_pid: int | None = None) -> None:
    (tmp / str(pid)).mkdir(parents=True, exist_ok=True)
    (tmp / str(pid) / "maps").write_text(f"7f00-7f01 r-xp 0 08:01 1 {library}\n")
    (tmp / str(pid) / "status").write_text(f"Name:\tpython\nNSpid:\t{pid}" + (f"\t{ns_pid}" if ns_pid else "")
                                           + "\n")


@pytest.fixture
def fast(monkeypatch):
    monkeypatch.setattr(watch_module, "MIN_INTERVAL_S", 0.05)
    monkeypatch.setattr(watch_module, "INIT_HOLD_S", 0.6)


@pytest.fixture
def servers():
    made: list[RasStandIn] = []
    watches: list[RasWatch] = []
    yield made, watches
    for w in watches:
        w.close()
    for s in made:
        s.close()


def watched(servers, tmp: Path, version: str, library: str, polls: bool = False,
            state=lambda n: healthy()) -> tuple[RasStandIn, RasWatch, JobProcess]:
    server = RasStandIn(state, version=version)
    fake_proc(tmp, 4000, library)
    w = RasWatch(interval_s=0.05, proc=str(tmp), polls=polls, addresses=lambda: HERE)
    servers[0].append(server)
    servers[1].append(w)
    return server, w, process(4000, (("NCCL_RAS_ADDR", f"127.0.0.1:{server.port}"),))


class Rounds:
    """The query thread's rounds, counted as each ends (RasWatch._ask_once wrapped by monkeypatch): what proves that
    the watch had its chances to ask before a test says it did not."""

    def __init__(self) -> None:
        self.count = 0
        self.ended = threading.Condition()

    def wait(self, count: int, timeout: float = 20.0) -> None:
        with self.ended:
            assert self.ended.wait_for(lambda: self.count >= count, timeout), f"{self.count} rounds of {count}"

    def next(self) -> None:
        with self.ended:
            count = self.count
        self.wait(count + 1)


@pytest.fixture
def rounds(monkeypatch) -> Rounds:
    seen = Rounds()
    ask_once = RasWatch._ask_once

    def counted(self: RasWatch, target: Address) -> bool:
        try:
            return ask_once(self, target)
        finally:
            with seen.ended:
                seen.count += 1
                seen.ended.notify_all()

    monkeypatch.setattr(RasWatch, "_ask_once", counted)
    return seen


class Ticks:
    """The tick's side, on the job's own clock (`now`, which StopSignals reads): 100 s a tick, each tick followed
    by a whole round of the query thread."""

    def __init__(self, w: RasWatch, rounds: Rounds) -> None:
        self.w, self.rounds, self.now = w, rounds, 0.0

    def run(self, the_job: Callable[[int], JobSnapshot], count: int, spinning: bool | None = None) -> JobSnapshot:
        """`count` ticks of `the_job(i)`; the job as the watch gives it after the last round."""
        for i in range(count):
            self.w.attach(the_job(i), self.now, spinning)
            self.now += 100.0
            self.rounds.next()
        return self.w.attach(the_job(count - 1), self.now - 100.0, spinning)


def tick_until(w: RasWatch, the_job: JobSnapshot, done, timeout: float = 20.0) -> JobSnapshot:
    end = time.monotonic() + timeout
    out = w.attach(the_job, time.time())
    while not done(out) and time.monotonic() < end:
        time.sleep(0.05)
        out = w.attach(the_job, time.time())
    return out


@pytest.mark.slow  # over the fast suite's minute on two cores (--durations)
def test_a_healthy_job_waiting_in_collectives_is_never_asked_on_a_crash_prone_release(tmp_path, fast, servers,
                                                                                     rounds) -> None:
    """NCCL 2.27.5 (PyTorch's pin): text only, and nccl#2346/#1762 in its STATUS path. A straggler's job: its fast
    ranks wait 97% of their samples in the all-reduce and their GPUs spin at idle power, while its steps advance
    and its stacks move. Twelve rounds, 100 s of the job's clock apart: never asked."""
    server, w, rank0 = watched(servers, tmp_path, "2.27.5", "/usr/lib/x86_64-linux-gnu/libnccl.so.2.27.5")
    ticks = Ticks(w, rounds)
    out = ticks.run(lambda i: job(rank0, waits=0.97, steps=10 + i), 12, spinning=True)
    assert server.statuses == 0 and server.sent() == []  # its release known from the library: nothing sent
    assert out.nccl is not None and out.nccl.policy is not None and out.nccl.queries == 0
    assert "NCCL 2.27.5" in out.nccl.policy and "#2346" in out.nccl.policy
    assert "asked only when the job stops, never while it makes progress" in out.nccl.policy
    assert out.nccl.version_source == "libnccl.so.2.27.5 of pid 4000"
    unstepped = ticks.run(lambda i: job(rank0, waits=0.97), 6, spinning=True)  # no steps known: its stacks move
    assert server.statuses == 0 and server.sent() == [] and unstepped.nccl is not None


@pytest.mark.slow  # over the fast suite's minute on two cores (--durations)
def test_a_stopped_job_is_asked_twice_per_stop(tmp_path, fast, servers, rounds) -> None:
    """No step and every rank's main thread on one stack for the still time: one STATUS, and one more CONFIRM_S
    later (a hang is counts unchanged across answers), however many rounds the stop lasts; progress (a step, a
    stack that moves) re-arms it, and the next stop is asked twice more."""
    server, w, rank0 = watched(servers, tmp_path, "2.27.5", "/usr/lib/x86_64-linux-gnu/libnccl.so.2.27.5")
    ticks = Ticks(w, rounds)
    ticks.run(lambda i: job(rank0, waits=0.97, steps=40, still_s=60.0 + 100 * i), 2)  # the 2nd: 100 s, no step
    assert server.wait_statuses(1)
    out = ticks.run(lambda i: job(rank0, waits=0.97, steps=40, still_s=260.0 + 100 * i), 8)
    assert server.statuses == 2 and [c.lines for c in server.conns] == [["CLIENT PROTOCOL 2", "STATUS"]] * 2
    assert out.nccl is not None and out.nccl.format == "text" and out.nccl.queries == 2
    words = out.nccl.policy or ""
    assert " once more, 100 s after the first (a hang is counts unchanged across answers): " in words
    assert words.endswith("every rank waits in a collective (97% or more of its samples); not again until the job "
                          "moves")
    moving = ticks.run(lambda i: job(rank0, waits=0.97, steps=41 + i), 3)  # progress resumes
    assert server.statuses == 2 and moving.nccl is not None and "asked at" not in (moving.nccl.policy or "")
    ticks.run(lambda i: job(rank0, waits=0.97, steps=44, still_s=60.0 + 100 * i), 2)
    assert server.wait_statuses(3)
    ticks.run(lambda i: job(rank0, waits=0.97, steps=44, still_s=260.0 + 100 * i), 8)
    assert server.statuses == 4 and [c.lines for c in server.conns] == [["CLIENT PROTOCOL 2", "STATUS"]] * 4


def test_never_while_a_communicator_initialises(tmp_path, fast, servers, rounds) -> None:
    server, w, rank0 = watched(servers, tmp_path, "2.27.5", "/opt/nccl/lib/libnccl.so.2.27.5", polls=True)
    initialising = job(rank0, waits=0.97, site="distributed_c10d.py:1600 init_process_group")
    out = Ticks(w, rounds).run(lambda i: initialising, 6)
    assert server.statuses == 0 and out.nccl is not None and "initialising a communicator" in (out.nccl.holding or "")


def test_user_asks_for_polling(tmp_path, fast, servers) -> None:
    server, w, rank0 = watched(servers, tmp_path, "2.27.5", "/opt/nccl/lib/libnccl.so.2.27.5", polls=True)
    out = tick_until(w, job(rank0), lambda o: o.nccl is not None and o.nccl.queries >= 2)
    assert server.statuses >= 2 and out.nccl is not None
    assert "every interval (--nccl-ras-poll)" in (out.nccl.policy or "")


def test_json_release_is_polled_and_monitored(tmp_path, fast, servers) -> None:
    server, w, rank0 = watched(servers, tmp_path, "2.30.7", "/opt/nccl/lib/libnccl.so.2.30.7")
    out = tick_until(w, job(rank0), lambda o: o.nccl is not None and o.nccl.queries >= 2)
    assert out.nccl is not None and out.nccl.format == "json" and out.nccl.policy == "NCCL 2.30.7: asked in JSON"
    assert server.wait_watchers(1)
    server.event("PEER_DEAD", healthy()[0].ranks[6])
    out = tick_until(w, job(rank0), lambda o: o.nccl is not None and o.nccl.events)
    assert out.nccl is not None and [(e.event, e.host, e.pid) for e in out.nccl.events] == [
        ("PEER_DEAD", "10.0.0.2", 4006)]
    statuses = [c.lines for c in server.conns if "STATUS" in c.lines]
    assert statuses and all(lines == ["CLIENT PROTOCOL 2", "SET FORMAT json", "STATUS"] for lines in statuses)


def test_unknown_release_is_careful_and_learns_json_without_a_status(tmp_path, fast, servers, rounds) -> None:
    server, w, rank0 = watched(servers, tmp_path, "2.30.7", "/opt/conda/lib/libnccl.so.2")
    out = Ticks(w, rounds).run(lambda i: job(rank0, steps=i), 6)
    assert server.statuses == 0 and server.conns[0].lines == ["CLIENT PROTOCOL 2", "SET FORMAT json"]
    assert out.nccl is not None and "version unknown" in (out.nccl.policy or "") and "2.28.7 or later" in (
        out.nccl.policy or "")


def test_version_from_a_wheels_dist_info(tmp_path) -> None:
    site = tmp_path / "venv/lib/python3.12/site-packages"
    (site / "nvidia/nccl/lib").mkdir(parents=True)
    (site / "nvidia_nccl_cu12-2.27.5.dist-info").mkdir()
    found = version_of_library(str(site / "nvidia/nccl/lib/libnccl.so.2"), "/nonexistent")
    assert found == ((2, 27, 5), "nvidia_nccl_cu12-2.27.5.dist-info")
    assert version_of_library("/usr/lib/libnccl.so.2.30.7") == ((2, 30, 7), "libnccl.so.2.30.7")
    assert version_of_library("/usr/lib/libnccl.so.2") is None
    assert parse_version("2.28.9+cuda12.9") == (2, 28, 9)


@pytest.mark.parametrize(("version", "poll", "words"), [
    ((2, 24, 3), False, "#1669"), ((2, 26, 5), False, "#1718"), ((2, 27, 7), False, "#2346"),
    ((2, 28, 3), False, "#1762"), ((2, 28, 9), True, "JSON"), ((2, 30, 7), True, "JSON"),
    ((2, 31, 0), False, "does not know"), (None, False, "unknown")])
def test_version_table(version, poll: bool, words: str) -> None:
    said = policy(version, None, False)
    assert said.poll is poll and words in said.words


def test_pod_ranks_join_by_namespace_pid_and_host(tmp_path, fast, servers) -> None:
    """Two pods on two nodes, each with namespace pids 17-20: this node's four join their host pids; the other
    node's pid 17-20 ranks are rows of their own, though a job process here has namespace pid 17 too."""
    server = RasStandIn(lambda n: pod(), version="2.30.7")
    servers[0].append(server)
    procs = []
    for i in range(4):
        fake_proc(tmp_path, 91000 + i, "/opt/nccl/lib/libnccl.so.2.30.7", ns_pid=17 + i)
        procs.append(process(91000 + i, (("NCCL_RAS_ADDR", f"127.0.0.1:{server.port}"),), rank=i))
    w = RasWatch(interval_s=0.05, proc=str(tmp_path), addresses=lambda: HERE)
    servers[1].append(w)
    the_job = JobSnapshot("job", (1,), "running", tuple(procs), None, 0,
                          ranks=tuple(RankFigures(i, "node-a", 91000 + i, samples=40) for i in range(4)))
    out = tick_until(w, the_job, lambda o: o.nccl is not None and o.nccl.queries >= 1)
    rows = {r.rank: r for r in out.ranks}
    assert [rows[i].pid for i in range(4)] == [91000, 91001, 91002, 91003]
    assert all(rows[i].samples == 40 and not rows[i].nccl_only and rows[i].nccl_state == "RUNNING" for i in range(4))
    assert [(rows[i].host, rows[i].pid, rows[i].nccl_only) for i in range(4, 8)] == [
        ("10.0.0.2", 17, True), ("10.0.0.2", 18, True), ("10.0.0.2", 19, True), ("10.0.0.2", 20, True)]
    assert rows[6].lag == 1 and namespace_pid(91001, str(tmp_path)) == 18


def test_another_jobs_answer_is_said_not_used(tmp_path, fast, servers) -> None:
    server, w, rank0 = watched(servers, tmp_path, "2.30.7", "/opt/nccl/lib/libnccl.so.2.30.7")
    the_job = JobSnapshot("job", (1,), "running", (rank0,), None, 0, ranks=(RankFigures(0, "node-a", 4000),))
    other = [StandComm(0xBEEF, [StandRank(i, "10.0.0.1", 7000 + i, i, {"AllReduce": 5}) for i in range(4)])]
    server.state = lambda n: other
    out = tick_until(w, the_job, lambda o: o.nccl is not None and o.nccl.queries >= 1)
    assert out.nccl is not None and out.nccl.foreign is not None and "another job's" in out.nccl.foreign
    assert "7000, 7001, 7002, 7003" in out.nccl.foreign
    assert out.ranks == the_job.ranks  # nothing joined


def test_the_judged_communicator_moves_with_the_job(tmp_path, fast, servers) -> None:
    """Tensor parallel: the world group idles after its first barrier; the TP group's counts move."""
    def moving(n: int) -> list[StandComm]:
        comms = tp()
        for comm in comms[1:3]:
            for r in comm.ranks:
                r.counts["AllReduce"] += 40 * n
        return comms

    server, w, rank0 = watched(servers, tmp_path, "2.30.7", "/opt/nccl/lib/libnccl.so.2.30.7", state=moving)
    out = tick_until(w, job(rank0), lambda o: o.nccl is not None and o.nccl.queries >= 3)
    assert out.nccl is not None and out.nccl.main is not None
    assert out.nccl.main.comm.size == 8 and out.nccl.main_key == ("0x1000", "0x5d1f:0xa000")
    assert max(c.comm.size for c in out.nccl.comms) == 16  # the larger world group is there, not judged


def test_timeout_factor_reaches_the_query(tmp_path, fast) -> None:
    fake_proc(tmp_path, 7, "/opt/nccl/lib/libnccl.so.2.30.7")
    asked = Asked([comms()])
    w = RasWatch(interval_s=0.05, proc=str(tmp_path), ask=asked, addresses=lambda: HERE)
    w.attach(job(process(7, (("NCCL_RAS_TIMEOUT_FACTOR", "2"), ("NCCL_RAS_ADDR", "127.0.0.1:9")))), 0.0)
    asked.wait(1)
    w.close()
    assert asked.calls[0][3] == 2.0 and asked.calls[0][4] == 16 << 20


class Asked:
    """Answers like NCCL, recording when each query began and ended and what it was given: communicators in JSON,
    a str as a text answer, an exception raised."""

    def __init__(self, answers: list[list[StandComm] | str | Exception]) -> None:
        self.answers, self.calls, self.active, self.most = answers, [], 0, 0
        self.done = threading.Condition()

    def __call__(self, address: Address, want_json: bool, factor: float, cap: int) -> RawReply:
        with self.done:
            self.active += 1
            self.most = max(self.most, self.active)
            self.calls.append((time.monotonic(), address, want_json, factor, cap))
            answer = self.answers[min(len(self.calls) - 1, len(self.answers) - 1)]
        try:
            if isinstance(answer, Exception):
                raise answer
            if isinstance(answer, str):
                return RawReply("text", answer, 2)
            return RawReply("json", json_reply(answer), 2)
        finally:
            with self.done:
                self.active -= 1
                self.done.notify_all()

    def wait(self, count: int) -> None:
        with self.done:
            assert self.done.wait_for(lambda: len(self.calls) >= count and self.active == 0, 20.0)


def comms(init: int = 0) -> list[StandComm]:
    return [StandComm(1, [StandRank(i, "10.0.0.1", 100 + i, i, {"AllReduce": 5}, init_state=init if i == 1 else 0)
                          for i in range(4)])]


@pytest.mark.slow  # over the fast suite's minute on two cores (--durations)
def test_address_from_environment_manners_and_init_hold(tmp_path: Path, fast) -> None:
    fake_proc(tmp_path, 7, "/opt/nccl/lib/libnccl.so.2.30.3")
    asked = Asked([comms(init=7), comms(), comms(), RasError("the server closed the connection mid-answer"),
                   comms()])
    w = RasWatch(interval_s=0.05, proc=str(tmp_path), ask=asked, addresses=lambda: HERE)
    the_job = job(process(7, (("NCCL_RAS_ADDR", "127.0.0.1:31234"),)))
    first = w.attach(the_job, 0.0)
    assert first.nccl is not None and first.nccl.address == "127.0.0.1:31234"
    assert first.nccl.source == "NCCL_RAS_ADDR of pid 7"
    asked.wait(5)
    w.close()
    times = [t for t, *_ in asked.calls]
    gaps = [b - a for a, b in zip(times, times[1:], strict=False)]
    assert asked.most == 1  # one query at a time
    assert gaps[0] >= 0.6 and min(gaps) >= 0.05  # held after init_state 7; never sooner than the interval
    view = w.attach(the_job, 0.0).nccl
    assert view is not None and view.queries >= 3
    assert any("mid-answer" in line for line in view.errors) and all("\n" not in line for line in view.errors)


def no_monitor(address: Address) -> tuple[socket.socket, bytes]:
    raise RasError("MONITOR refused: 'ERROR'")


def test_a_round_that_fails_unforeseen_is_one_line_and_the_thread_goes_on(tmp_path: Path, fast) -> None:
    """A query that raises what no one caught (a ValueError, not a RasError), then a text answer whose count has
    5,000 digits (int() past Python's limit): each one line in the job view, and the next round is asked."""
    fake_proc(tmp_path, 7, "/opt/nccl/lib/libnccl.so.2.30.7")
    huge = "NCCL version 2.27.5\nJob summary\n  Encountered " + "9" * 5000 + " communication timeouts\n"
    asked = Asked([ValueError("no such field"), huge, comms()])
    w = RasWatch(interval_s=0.05, proc=str(tmp_path), ask=asked, addresses=lambda: HERE,
                 monitor=no_monitor)
    the_job = job(process(7, (("NCCL_RAS_ADDR", "127.0.0.1:9"),)))
    w.attach(the_job, 0.0)
    asked.wait(3)
    view = tick_until(w, the_job, lambda o: o.nccl is not None and o.nccl.queries >= 1).nccl
    w.close()
    assert view is not None and view.queries >= 1 and w._thread is not None
    errors = [line[9:] for line in view.errors]
    assert "RAS query: unexpected ValueError (no such field); going on" in errors
    assert any(line.startswith("unreadable text answer (ValueError: Exceeds the limit (4300 digits)")
               for line in errors) and all("\n" not in line for line in errors)


def test_monitor_goes_on_past_an_unreadable_event_and_an_unforeseen_error(tmp_path: Path, fast) -> None:
    """MONITOR (2.29+): the first connection attempt fails with a KeyError, the second sends an event whose GPU
    list is "1,,2" and then one that reads: the first is said lost, the second arrives."""
    fake_proc(tmp_path, 7, "/opt/nccl/lib/libnccl.so.2.30.7")
    mine, theirs = socket.socketpair()
    tries: list[int] = []

    def monitor(address: Address) -> tuple[socket.socket, bytes]:
        tries.append(1)
        if len(tries) == 1:
            raise KeyError("peer")
        return mine, b"[2026-12-06 20:27:00] PEER_DEAD: Process 4006 on node 10.0.0.2 managing GPUs 1,,2\n"

    w = RasWatch(interval_s=0.05, proc=str(tmp_path), ask=Asked([comms()]), addresses=lambda: HERE, monitor=monitor)
    the_job = job(process(7, (("NCCL_RAS_ADDR", "127.0.0.1:9"),)))
    with theirs:
        theirs.sendall(b"[2026-12-06 20:27:01] PEER_DEAD: Process 4007 on node 10.0.0.2 managing GPU 3\n")
        view = tick_until(w, the_job, lambda o: o.nccl is not None and bool(o.nccl.events)).nccl
        w.close()
    assert view is not None and [(e.event, e.pid, e.gpus) for e in view.events] == [("PEER_DEAD", 4007, (3,))]
    errors = [line[9:] for line in view.errors]
    assert "MONITOR: unexpected KeyError ('peer'); going on" in errors
    assert "MONITOR: an event lost, unreadable (ValueError: invalid literal for int() with base 10: '')" in errors


@pytest.mark.parametrize(("library", "env"), [
    ("/usr/lib/libc.so.6", ()),  # a gloo job: no libnccl, the watch looks on and on
    ("/usr/lib/libnccl.so.2.27.5", (("NCCL_RAS_ADDR", "not an address"),)),  # libnccl, no address to ask at
    ("/usr/lib/libnccl.so.2.27.5", ())])  # the address found: the job read on every tick
def test_what_is_kept_per_pid_is_the_live_processes_only(tmp_path: Path, library: str, env) -> None:
    """Fifty epochs of four DataLoader workers (forked from the rank: they map its libnccl, carry its environment):
    the watch keeps its rank and the live epoch's workers, not every worker it ever saw."""
    w = RasWatch(interval_s=5.0, proc=str(tmp_path), ask=Asked([comms()]), addresses=lambda: HERE)
    w._closed = True  # no query thread: the tick's side alone
    fake_proc(tmp_path, 4000, library)
    for epoch in range(50):
        workers = [5000 + 4 * epoch + i for i in range(4)]
        for pid in workers:
            fake_proc(tmp_path, pid, library)
        w.attach(job(process(4000, env), *(process(pid, env, rank=None) for pid in workers)), 0.0)
    live = {4000, *workers}
    assert set(w._checked) <= live and set(w._nccl_pids) <= live and set(w._ns) <= live
    assert bool(w._nccl_pids) == ("libnccl" in library)


def test_the_answers_side_is_made_once_an_answer_and_the_join_each_tick(tmp_path: Path, fast, monkeypatch) -> None:
    """The job probe gives its ranks as a new tuple each tick: each tick's figures are joined with the answer, whose
    side of the join (every rank's counts and row) and names (join.named) are made once, and again when this node's
    job processes change."""
    made: list[str] = []

    def counted(name: str):
        real = getattr(watch_module, name)
        return lambda *args: made.append(name) or real(*args)

    for name in ("named", "answer_side"):
        monkeypatch.setattr(watch_module, name, counted(name))
    fake_proc(tmp_path, 100, "/opt/nccl/lib/libnccl.so.2.30.7", ns_pid=100)
    fake_proc(tmp_path, 101, "/opt/nccl/lib/libnccl.so.2.30.7", ns_pid=101)
    asked = Asked([comms()])
    w = RasWatch(interval_s=600.0, proc=str(tmp_path), ask=asked, addresses=lambda: HERE, monitor=no_monitor)
    w.address = Address("127.0.0.1", 9)  # asked at once, then not for ten minutes

    def the_job(samples: int, pids: tuple[int, ...] = (100,)) -> JobSnapshot:
        return JobSnapshot("job", (1,), "running", tuple(process(pid, rank=pid - 100) for pid in pids), None, 0,
                           ranks=tuple(RankFigures(pid - 100, "node-a", pid, samples=samples) for pid in pids))

    tick_until(w, the_job(0), lambda o: o.nccl is not None and o.nccl.queries >= 1)
    made.clear()
    outs = [w.attach(the_job(samples), 0.0) for samples in range(1, 21)]
    assert [o.ranks[0].samples for o in outs] == list(range(1, 21))  # joined each tick
    assert all(dict(o.ranks[0].collectives)["AllReduce"] == 5 and o.ranks[0].lag == 0 for o in outs)
    assert all(o.ranks[1].nccl_only and o.ranks[1].host == "10.0.0.1" for o in outs)  # pid 101: not the job's
    assert len(made) <= 2 and all(o.nccl is outs[0].nccl for o in outs)
    assert outs[0].nccl is not None and outs[0].nccl.comms[0].comm.ranks[0].name == "node-a"
    grown = w.attach(the_job(30, (100, 101)), 0.0)  # pid 101 joins the job: the answer's side made again
    w.close()
    assert [(r.rank, r.pid, r.samples, r.nccl_only) for r in grown.ranks[:3]] == [
        (0, 100, 30, False), (1, 101, 30, False), (2, 102, 0, True)]


def test_not_asked_without_libnccl(tmp_path: Path, fast) -> None:
    asked = Asked([comms()])
    w = RasWatch(interval_s=0.05, proc=str(tmp_path), ask=asked)
    (tmp_path / "7").mkdir()
    (tmp_path / "7" / "maps").write_text("7f00-7f01 r-xp 0 08:01 1 /usr/lib/libc.so.6\n")
    out = w.attach(job(process(7)), 0.0)
    assert out.nccl is None and w._thread is None
    w.close()


def test_default_port_and_given_address(tmp_path: Path, fast) -> None:
    fake_proc(tmp_path, 7, "/usr/lib/x86_64-linux-gnu/libnccl.so.2.30.7")
    w = RasWatch(interval_s=0.05, proc=str(tmp_path), ask=Asked([comms()]), addresses=lambda: HERE)
    assert w.attach(job(process(7)), 0.0).nccl.address == "localhost:28028"  # type: ignore[union-attr]
    w.close()
    given = RasWatch(Address("127.0.0.1", 9), interval_s=0.05, proc=str(tmp_path / "none"), ask=Asked([comms()]),
                     addresses=lambda: HERE)
    view = given.attach(job(process(8)), 0.0).nccl
    assert view is not None and (view.address, view.source) == ("127.0.0.1:9", "--nccl-ras")
    given.close()


def test_maps_of_a_process_that_mmaps_libnccl(tmp_path: Path) -> None:
    lib = tmp_path / "libnccl.so.2"
    lib.write_bytes(b"\0" * 4096)
    with open(lib, "rb") as f, mmap.mmap(f.fileno(), 4096, prot=mmap.PROT_READ):
        assert maps_libnccl(os.getpid())
    assert not maps_libnccl(999_999_999)


def test_interval_never_below_five_seconds() -> None:
    assert watch_module.interval_seconds(0.1) == 5.0 and watch_module.interval_seconds(30) == 30


def test_ras_turned_off_by_the_job_is_not_asked(tmp_path: Path, fast) -> None:
    fake_proc(tmp_path, 7, "/usr/lib/libnccl.so.2")
    asked = Asked([comms()])
    w = RasWatch(interval_s=0.05, proc=str(tmp_path), ask=asked)
    out = w.attach(job(process(7, (("NCCL_RAS_ENABLE", "0"),))), 0.0)
    assert out.nccl is None and w._thread is None and not asked.calls
    w.close()
