from __future__ import annotations

import os
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from hwtop.model.snapshot import ProcessInfo
from hwtop.probes.processes import CLOCK_TICKS, DETAILS_REFRESH_S, PAGE_SIZE, PF_KTHREAD, ProcessProbe, parse_stat
from tests.sysfs_trees import write


def stat_line(pid: int, name: str, state: str = "S", ppid: int = 1, utime: int = 0, stime: int = 0,
              threads: int = 1, start: int = 1000, rss_pages: int = 100, processor: int = 0,
              flags: int = 0) -> str:
    fields = [state, str(ppid)] + ["0"] * 4 + [str(flags)] + ["0"] * 4 + [str(utime), str(stime)]
    fields += ["0"] * 4 + [str(threads), "0", str(start), "0", str(rss_pages)]
    fields += ["0"] * (36 - len(fields)) + [str(processor)] + ["0"] * 15
    return f"{pid} ({name}) " + " ".join(fields) + "\n"


def test_parse_stat_with_hostile_name() -> None:
    stat = parse_stat(stat_line(42, "evil) S 1 (x", utime=7, stime=3, threads=4, rss_pages=9, processor=1))
    assert stat.pid == 42 and stat.name == "evil) S 1 (x"
    assert stat.cpu_ticks == 10 and stat.threads == 4 and stat.rss_pages == 9 and stat.processor == 1


@given(st.text(alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\n\x00"), max_size=16))
def test_parse_stat_any_comm(name: str) -> None:
    assert parse_stat(stat_line(7, name)).name == name


def _proc_tree(root: Path, entries: dict[int, str]) -> None:
    for pid, text in entries.items():
        write(root, f"proc/{pid}/stat", text)
        write(root, f"proc/{pid}/cmdline", f"python\0train.py\0--rank\0{pid}\0")
        write(root, f"proc/{pid}/status", "Name:\tpython\nCpus_allowed_list:\t0-3,8\n")


def test_cpu_percent_top_n_partial_and_vanished(tmp_path: Path) -> None:
    now = [10.0]
    _proc_tree(tmp_path, {
        100: stat_line(100, "python", utime=0),
        101: stat_line(101, "worker", utime=0),
        102: stat_line(102, "idle"),
        2: stat_line(2, "kthreadd", ppid=0, flags=PF_KTHREAD),
        3: stat_line(3, "kworker/0:1", ppid=2, flags=PF_KTHREAD | 0x40),
    })
    write(tmp_path, "proc/103/stat", "garbage without parentheses")
    (tmp_path / "proc/104").mkdir()  # vanished between listdir and open
    probe = ProcessProbe(str(tmp_path), limit=2, clock=lambda: now[0])
    first = probe.read()
    assert all(p.cpu_percent is None for p in first)
    # One second later: pid 100 used a full core, pid 101 half of one.
    _proc_tree(tmp_path, {100: stat_line(100, "python", utime=CLOCK_TICKS),
                          101: stat_line(101, "worker", utime=CLOCK_TICKS // 2)})
    os.remove(tmp_path / "proc/102/cmdline")  # forbidden or gone mid-read: shown partially
    now[0] += 1.0
    rows = probe.read()
    assert [p.pid for p in rows] == [100, 101, 102]  # the busiest two first, then every other process
    assert rows[0].cpu_percent == 100.0 and rows[1].cpu_percent == 50.0
    assert rows[0].cmdline == "python train.py --rank 100"
    assert rows[0].cpu_affinity == (0, 1, 2, 3, 8)
    assert rows[0].rss_bytes == 100 * PAGE_SIZE
    everything = ProcessProbe(str(tmp_path), limit=50, clock=lambda: now[0]).read()
    pids = {p.pid for p in everything}
    assert 102 in pids and 2 not in pids and 3 not in pids  # kernel threads hidden
    assert next(p for p in everything if p.pid == 102).cmdline is None


def test_reused_pid_starts_fresh(tmp_path: Path) -> None:
    now = [0.0]
    _proc_tree(tmp_path, {200: stat_line(200, "a", utime=5000, start=10)})
    probe = ProcessProbe(str(tmp_path), clock=lambda: now[0])
    probe.read()
    _proc_tree(tmp_path, {200: stat_line(200, "b", utime=10, start=99)})
    now[0] += 1
    assert probe.read()[0].cpu_percent is None


def test_live_proc_lists_this_process() -> None:
    rows = ProcessProbe(limit=10_000).read()
    me = next(p for p in rows if p.pid == os.getpid())
    assert me.user is not None and me.rss_bytes and (me.threads or 0) >= 1
    assert me.cpu_affinity == tuple(sorted(os.sched_getaffinity(0)))


def test_in_a_container_pid_2_and_its_children_are_ordinary_processes(tmp_path: Path) -> None:
    """Kernel threads are told by their PF_KTHREAD flag, not by pid 2: in a pid namespace pid 2 is whatever the
    entrypoint started second."""
    _proc_tree(tmp_path, {
        1: stat_line(1, "tini", ppid=0),
        2: stat_line(2, "python", ppid=1),
        3: stat_line(3, "pt_data_worker", ppid=2),
    })
    pids = {p.pid for p in ProcessProbe(str(tmp_path), limit=10).read()}
    assert pids == {1, 2, 3}


def test_a_renamed_process_shows_its_new_command_line(tmp_path: Path) -> None:
    """setproctitle and DataLoader workers rename themselves after start: a changed comm re-reads cmdline."""
    now = [0.0]
    _proc_tree(tmp_path, {300: stat_line(300, "python", start=5)})
    probe = ProcessProbe(str(tmp_path), clock=lambda: now[0])
    assert probe.read()[0].cmdline == "python train.py --rank 300"
    write(tmp_path, "proc/300/stat", stat_line(300, "trainer:rank0", start=5))
    write(tmp_path, "proc/300/cmdline", "trainer: rank 0 epoch 3\0")
    now[0] += 1
    row = probe.read()[0]
    assert row.name == "trainer:rank0" and row.cmdline == "trainer: rank 0 epoch 3"


def test_an_unchanged_name_is_read_again_only_on_the_slow_cadence(tmp_path: Path) -> None:
    from hwtop.probes.processes import DETAILS_REFRESH_S

    now = [0.0]
    _proc_tree(tmp_path, {301: stat_line(301, "python", start=5)})
    probe = ProcessProbe(str(tmp_path), clock=lambda: now[0])
    probe.read()
    write(tmp_path, "proc/301/cmdline", "python\0other.py\0")
    now[0] += 1
    assert probe.read()[0].cmdline == "python train.py --rank 301"  # cached: the name did not change
    now[0] += DETAILS_REFRESH_S
    assert probe.read()[0].cmdline == "python other.py"


def _counting_opens(monkeypatch, probe_root: Path) -> list[str]:
    """Every stat path the probe opens under probe_root, in order."""
    import hwtop.probes.processes as module

    opened: list[str] = []
    real_open = os.open

    def spy(path, flags, *args):
        if str(path).startswith(str(probe_root)) and str(path).endswith("/stat"):
            opened.append(str(path))
        return real_open(path, flags, *args)
    monkeypatch.setattr(module.os, "open", spy)
    return opened


def test_a_still_process_is_read_one_tick_in_cold_every_and_its_cpu_spans_the_gap(tmp_path: Path,
                                                                                 monkeypatch) -> None:
    from hwtop.probes.processes import COLD_EVERY, STILL_READS

    now = [0.0]
    _proc_tree(tmp_path, {400: stat_line(400, "busy", utime=0, rss_pages=10),
                          401: stat_line(401, "sleeper", utime=50, rss_pages=1)})
    probe = ProcessProbe(str(tmp_path), limit=1, clock=lambda: now[0])  # only the busy one is on screen
    busy = 0
    for _ in range(STILL_READS + 1):  # the sleeper's ticks stand still: it turns cold
        busy += CLOCK_TICKS
        write(tmp_path, "proc/400/stat", stat_line(400, "busy", utime=busy, rss_pages=10))
        now[0] += 1
        assert probe.read()[0].pid == 400
    opened = _counting_opens(monkeypatch, tmp_path)
    for _ in range(COLD_EVERY):
        busy += CLOCK_TICKS
        write(tmp_path, "proc/400/stat", stat_line(400, "busy", utime=busy, rss_pages=10))
        now[0] += 1
        rows = probe.read()
        assert [(p.pid, p.cpu_percent) for p in rows] == [(400, 100.0), (401, 0.0)]  # still listed, at 0 %
    assert sum(path.endswith("/400/stat") for path in opened) == COLD_EVERY  # the moving one: every read
    assert sum(path.endswith("/401/stat") for path in opened) == 1  # the still one: once in COLD_EVERY
    write(tmp_path, "proc/401/stat", stat_line(401, "sleeper", utime=50 + 2 * CLOCK_TICKS, rss_pages=1))
    probe.limit = 2  # now on screen: read fresh, its CPU measured since its own last read
    now[0] += 1
    sleeper = next(p for p in probe.read() if p.pid == 401)
    assert sleeper.cpu_percent is not None and 0 < sleeper.cpu_percent <= 200.0
    assert (200.0 / sleeper.cpu_percent).is_integer()  # 2 s of CPU over the whole seconds since its last read


def test_a_cold_process_on_screen_is_read_fresh_every_tick(tmp_path: Path) -> None:
    now = [0.0]
    _proc_tree(tmp_path, {500: stat_line(500, "sleeper", utime=7, rss_pages=3)})
    probe = ProcessProbe(str(tmp_path), clock=lambda: now[0])
    for _ in range(4):
        now[0] += 1
        probe.read()
    write(tmp_path, "proc/500/stat", stat_line(500, "sleeper", utime=7 + CLOCK_TICKS, rss_pages=30))
    now[0] += 1
    row = probe.read()[0]
    assert row.cpu_percent == 100.0 and row.rss_bytes == 30 * PAGE_SIZE


def test_a_cold_process_that_exits_leaves_at_once(tmp_path: Path) -> None:
    import shutil

    now = [0.0]
    _proc_tree(tmp_path, {600: stat_line(600, "a"), 601: stat_line(601, "b")})
    probe = ProcessProbe(str(tmp_path), clock=lambda: now[0])
    for _ in range(4):
        now[0] += 1
        probe.read()
    shutil.rmtree(tmp_path / "proc/601")
    now[0] += 1
    assert [p.pid for p in probe.read()] == [600]


def test_an_unchanged_row_is_handed_out_again_and_a_change_makes_a_new_one(tmp_path: Path) -> None:
    now = [0.0]
    _proc_tree(tmp_path, {300: stat_line(300, "still", utime=7), 301: stat_line(301, "busy", utime=0)})
    probe = ProcessProbe(str(tmp_path), clock=lambda: now[0])
    probe.read()
    _proc_tree(tmp_path, {301: stat_line(301, "busy", utime=CLOCK_TICKS)})
    now[0] += 1.0
    second = {p.pid: p for p in probe.read()}
    assert second[300].cpu_percent == 0.0 and second[301].cpu_percent == 100.0
    now[0] += 1.0
    third = {p.pid: p for p in probe.read()}
    assert third[300] is second[300]  # the same stat line, CPU %, details and owner: the same row
    assert third[301] is not second[301] and third[301].cpu_percent == 0.0  # same line, its CPU % fell to 0
    _proc_tree(tmp_path, {300: stat_line(300, "still", utime=7, rss_pages=555)})
    now[0] += 1.0
    fourth = {p.pid: p for p in probe.read()}
    assert fourth[300] is not third[300] and fourth[300].rss_bytes == 555 * PAGE_SIZE
    write(tmp_path, "proc/300/cmdline", "still\0--renamed\0")
    now[0] += DETAILS_REFRESH_S
    assert next(p for p in probe.read() if p.pid == 300).cmdline == "still --renamed"  # details still re-read


def test_every_process_is_listed_and_those_outside_the_busiest_have_their_details_read_once(tmp_path: Path,
                                                                                           monkeypatch) -> None:
    """The cap is on reading details, not on what is listed: 200 processes, the 60 busiest read in full each
    time, every other one found by its pid, name and command line, its details read once in its life and at
    most NEW_DETAILS of them a read (listed by its name until its turn)."""
    import hwtop.probes.processes as module

    monkeypatch.setattr(module, "NEW_DETAILS", 50)
    now = [0.0]
    _proc_tree(tmp_path, {pid: stat_line(pid, f"proc{pid}", utime=0) for pid in range(1000, 1200)})
    probe = ProcessProbe(str(tmp_path), limit=60, clock=lambda: now[0])
    reads: list[tuple[ProcessInfo, ...]] = []
    for _ in range(4):
        now[0] += 1
        reads.append(probe.read())
    first, last = reads[0], reads[-1]
    assert len(first) == len(last) == 200 and {p.pid for p in last} == set(range(1000, 1200))
    assert sum(p.cmdline is not None for p in first) == 60 + 50  # the busiest, and NEW_DETAILS others
    idle = next(p for p in first if p.cmdline is None)
    assert idle.name.startswith("proc") and idle.user is None and idle.cpu_percent is None  # no rate at first
    assert all(p.cmdline == f"python train.py --rank {p.pid}" for p in reads[2])  # 60 + 3 x 50 >= 200
    opened: list[str] = []
    real_open = os.open

    def spy(path, flags, *args):  # noqa: ANN001, ANN202 - os.open's own
        opened.append(str(path))
        return real_open(path, flags, *args)

    monkeypatch.setattr(module.os, "open", spy)
    now[0] += 1
    again = probe.read()
    assert all(a is b for a, b in zip(sorted(again, key=lambda p: p.pid), sorted(last, key=lambda p: p.pid),
                                      strict=True))  # nothing changed: the very rows, none made again
    assert opened and all(path.endswith("/stat") for path in opened), opened  # no details read again
