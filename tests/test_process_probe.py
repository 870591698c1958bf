from __future__ import annotations

import os
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from hwtop.probes.processes import CLOCK_TICKS, PAGE_SIZE, PF_KTHREAD, ProcessProbe, parse_stat
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
