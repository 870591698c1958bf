from __future__ import annotations

import os
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from hwtop.probes.processes import CLOCK_TICKS, PAGE_SIZE, ProcessProbe, parse_stat
from tests.sysfs_trees import write


def stat_line(pid: int, name: str, state: str = "S", ppid: int = 1, utime: int = 0, stime: int = 0,
              threads: int = 1, start: int = 1000, rss_pages: int = 100, processor: int = 0) -> str:
    fields = [state, str(ppid)] + ["0"] * 9 + [str(utime), str(stime)] + ["0"] * 4 + [str(threads), "0",
                                                                                         str(start), "0",
                                                                                         str(rss_pages)]
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
        2: stat_line(2, "kthreadd", ppid=0),
        3: stat_line(3, "kworker/0:1", ppid=2),
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
    assert [p.pid for p in rows] == [100, 101]
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
    assert me.user is not None and me.rss_bytes and me.threads >= 1
    assert me.cpu_affinity == tuple(sorted(os.sched_getaffinity(0)))
