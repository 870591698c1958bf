"""The rank table as a user reads it at 80 columns and on a wide terminal (issue 42's leftovers, issue 48 point 4):
columns chosen by width, whole (the least telling give way first, no header or word cut); every rank a finding
names marked ◀, as its title names it, and first, above a remote rank one collective behind by normal jitter."""

from __future__ import annotations

import re

from hwtop.model.finding import Finding
from hwtop.model.job import JobSnapshot, RankFigures
from hwtop.model.ras import NcclView
from hwtop.widgets.job_ranks import MARK_LABELS, fit_words, named_ranks, parts_lines, rank_table

SITE = "train.py:188 forward_backward"


def two_nodes(late: int = 8, lag: dict[int, int] | None = None) -> JobSnapshot:
    """Sixteen ranks, eight here with stacks and eight on 10.0.0.2 known from NCCL's RAS alone; `lag`: rank ->
    collectives behind (a remote rank one behind is normal while a job runs)."""
    lag = lag if lag is not None else {late: 1}
    ranks = tuple(RankFigures(i, "dgx-a100-demo" if i < 8 else "10.0.0.2", 41000 + i if i < 8 else 52000 + i,
                              gpu=i % 8, steps=141 if i < 8 else None, site=SITE if i < 8 else None,
                              samples=100 if i < 8 else 0, nccl_only=i >= 8, lag=lag.get(i, 0), nccl_state="RUNNING",
                              shares=((("collective", 0.03), ("compute", 0.94), ("other", 0.03)) if i == 3 else
                                      (("collective", 0.55), ("compute", 0.42), ("other", 0.03))) if i < 8 else ())
                  for i in range(16))
    return JobSnapshot("pid 40990", (40990,), "running", (), None, 0, ranks=ranks,
                       nccl=NcclView("10.0.0.1:28028", "demo: NCCL_RAS_ADDR of the ranks", (), 6, 0.0, "json"))


def rows(lines: list[str]) -> list[str]:
    """The ranks' rows: the lines under the column header."""
    header = next(i for i, line in enumerate(lines) if line.lstrip().startswith("RANK "))
    return [line for line in lines[header + 1:] if re.match(r"^[◀ ] *\d+ ", line)]


def test_at_80_columns_the_columns_fit_whole_and_the_least_telling_give_way() -> None:
    lines = [line.plain for line in rank_table(two_nodes(), 74, {3: "straggler"})]
    assert all(len(line) <= 74 for line in lines)
    header = next(line for line in lines if line.lstrip().startswith("RANK"))
    assert header.split() == ["RANK", "HOST", "PID", "NCCL", "LAG", "WAIT", "COMP", "DATA", "BUSY", "AT"]
    assert "…" not in header
    # the legend wraps between its parts, never inside one, and names only columns on screen
    assert not any(line.rstrip().endswith("…") for line in lines if line not in rows(lines))
    assert "Ranks · WAIT: in collectives, waiting for the others · ◀ straggler" in lines
    assert any(line.strip() == "LAG: collectives behind the most advanced rank (NCCL RAS)" for line in lines)
    first = rows(lines)[0]
    assert first.split()[:9] == ["◀", "3", "dgx-a100-demo", "41003", "RUNNING", "0", "3%", "94%", "·"]
    assert first.rstrip().endswith("train.py:188 …")  # the site cut after a whole word


def test_a_wide_terminal_shows_every_phase_and_says_why_a_rank_is_marked() -> None:
    lines = [line.plain for line in rank_table(two_nodes(), 196, {3: "straggler"})]
    header = next(line for line in lines if line.lstrip().startswith("RANK"))
    assert header.split()[:14] == ["RANK", "HOST", "PID", "STEPS", "NCCL", "LAG", "WAIT", "COMP", "DATA", "PY", "H2D",
                                   "CKPT", "GPU", "BUSY"]
    assert rows(lines)[0].rstrip().endswith(f"{SITE}  ◀ straggler")


def test_the_named_rank_sorts_above_a_remote_rank_one_collective_behind() -> None:
    """NCCL's RAS finds rank 13 one AllReduce behind (normal jitter) at the moment rank 3, the straggler the
    findings name, has caught up: rank 3 first, then by lag."""
    lines = [line.plain for line in rank_table(two_nodes(lag={13: 1}), 116, {3: "straggler"})]
    order = [int(line[1:5]) for line in rows(lines)]
    assert order[:3] == [3, 13, 0]
    assert rows(lines)[0].startswith("◀") and not rows(lines)[1].startswith("◀")


def finding(rule: str, title: str, *evidence: str) -> Finding:
    return Finding(rule, "warning", title, evidence, ())


def test_every_rank_a_finding_names_is_marked_as_its_title_says() -> None:
    hang = finding("collective-hang", "Rank 5 never reached the collective the others wait in",
                   "NCCL RAS: rank 5 (pid 41005 on 10.0.0.1, GPU 5) has not launched AllReduce #1060")
    straggler = finding("rank-straggler", "Rank 3 holds the job back: the others wait for it")
    lost = finding("nccl-rank-lost", "NCCL cannot reach 2 ranks",
                   "rank 12 (pid 52012 on 10.0.0.2, GPU 4): not answering NCCL's RAS",
                   "rank 14 (pid 52014 on 10.0.0.2, GPU 6): considered dead by NCCL (unreachable for 60 s)")
    starved = finding("data-starved", "GPU0-7 starved: rank 0 (pid 41000), rank 1 (pid 41001) waits for data")
    named = named_ranks((hang, straggler, lost, starved))
    assert named == {5: MARK_LABELS["collective-hang"], 3: "straggler", 12: MARK_LABELS["nccl-rank-lost"],
                     14: MARK_LABELS["nccl-rank-lost"]}  # the data wait of every rank singles none out
    lines = [line.plain for line in rank_table(two_nodes(), 74, named)]
    marked = [int(line[1:5]) for line in rows(lines) if line.startswith("◀")]
    assert marked == [3, 5, 12, 14] and [int(line[1:5]) for line in rows(lines)][:4] == marked
    assert any(f"◀ rank 5: {MARK_LABELS['collective-hang']}" in line for line in lines)  # which mark says what


def test_words_are_cut_whole_and_parts_wrap_between_them() -> None:
    from rich.text import Text

    assert fit_words(Text("train.py:188 forward_backward"), 16).plain == "train.py:188 …"
    assert fit_words(Text("/a/very/long/path/without/spaces"), 10).plain == "/a/very/l…"
    # a long word after a short start is cut inside rather than leave the room empty
    assert fit_words(Text("python3 -c #\nimport_multiprocessing_as_mp; time.sleep(60)"), 30, slack=4).plain == \
        "python3 -c #\nimport_multiproce…"
    lines = parts_lines([Text("one two"), Text("three four"), Text("five")], 12)
    assert [line.plain for line in lines] == ["one two", "  three four", "  five"]


def test_the_job_panel_wraps_its_summary_and_placement_between_parts_indented() -> None:
    """On a narrow terminal the summary's eight GPUs read once, and a rank's placement line wraps between its parts,
    indented; `LOCAL_RANK=0 of allowed …` read as one phrase where no thread was seen running."""
    from hwtop.model.job import JobProcess
    from hwtop.widgets.job import JobPanel

    ranks = tuple(JobProcess(41000 + i, 40990, "python3", "/usr/bin/python3 -u train.py --arch resnet50", f"rank {i}",
                             i, 1, "S", 44.0, 14 << 30, 86, tuple(range(64)), gpus=((i, 61 << 30),), local_rank=i,
                             numa_pages=((0, 100),)) for i in range(8))
    job = JobSnapshot("pid 40990", (40990,), "running", ranks, 352.0, 112 << 30,
                      tuple((i, 61 << 30) for i in range(8)))
    panel = JobPanel()
    panel.show(job, {}, {i: 0 for i in range(8)}, {c: 0 for c in range(64)})
    lines = [line.plain for line in panel.lines(70)]
    assert all(len(line) <= 70 for line in lines)
    assert lines[:2] == ["RUNNING 8 process(es) (0 seen) · CPU 352% · RSS 112.0G", "  GPU0-7 61.0G each"]
    placement = lines[lines.index("Placement") + 1:]
    assert placement[:2] == ["  rank 0 (pid 41000): GPU0 (node 0) · LOCAL_RANK=0",
                             "    allowed CPUs 0-63 (node 0) · memory n0 100%"]
    assert not any("LOCAL_RANK=0 of allowed" in line for line in lines)


def test_lag_is_judged_over_queries_one_behind_once_stays_in_its_place() -> None:
    """Issue 55: a healthy remote rank at LAG 1 once (a query catching a collective in flight) did not stay out of
    the top of "worst first"; NCCL's view says in how many recent queries each rank was behind."""
    from msgspec.structs import replace

    from hwtop.model.ras import NcclComm, RasComm

    base = two_nodes(lag={13: 1, 10: 2})
    comm = NcclComm(RasComm("abc", 16, ()), 0.0, 60.0, 6, 6, behind=((13, 1), (10, 4)))
    view = replace(base.nccl, comms=(comm,))  # type: ignore[arg-type]
    lines = [line.plain for line in rank_table(replace(base, nccl=view), 116, {3: "straggler"})]
    order = [int(line[1:5]) for line in rows(lines)]
    assert order[:3] == [3, 10, 0]  # the named rank, then the rank behind in 4 of 6 queries; 13 in its place
    assert order.index(13) > order.index(12)
