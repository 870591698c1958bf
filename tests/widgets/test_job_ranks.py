"""The job view's rank table: the ranks side by side at 80 and 200 cells, the straggler marked, an unreadable
rank's reason in place of its site, a hostile host label shown and not obeyed, nothing for a single process; each
rank's STATE as the frame's verdicts have it."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st
from msgspec.structs import replace

from hwtop.advice.thresholds import Thresholds
from hwtop.demo.profiles import GIB
from hwtop.model.frame import Frame
from hwtop.model.job import JobSnapshot, RankFigures, RankStacks
from hwtop.model.verdict import SHORT, Verdict, Verdicts
from hwtop.widgets.job import JobPanel
from hwtop.widgets.job_ranks import rank_table
from hwtop.widgets.panel import View
from tests.factories import host_snapshot

SITE = "ddp_straggler.py:25 python_augmentation"
RANKS = (RankFigures(0, "node-a", pid=510, shares=(("collective", 0.91), ("compute", 0.08), ("other", 0.01)),
                     samples=130, site="ddp_straggler.py:57 main"),
         RankFigures(1, "node-a", pid=511, shares=(("compute", 0.28), ("other", 0.7), ("collective", 0.02)),
                     samples=140, site=SITE),
         RankFigures(2, "node-b\x1b[2J", pid=None, samples=0))


def job(ranks: tuple[RankFigures, ...] = RANKS, **fields) -> JobSnapshot:
    return JobSnapshot("pid 500", (500,), "running", (), 150.0, GIB, ranks=ranks, **fields)


def test_at_80_cells_four_phases_the_site_and_the_straggler_marked_before_its_rank():
    lines = [line.plain for line in rank_table(job(), 76, {1: "straggler"})]
    assert lines == [
        "Ranks · WAIT: in collectives, waiting for the others · ◀ straggler",
        " RANK HOST           PID  WAIT  COMP  DATA    PY BUSY AT                    ",
        "    0 node-a         510   91%    8%     ·    1% ddp_straggler.py:57 main",
        "◀   1 node-a         511    2%   28%     ·   70% ddp_straggler.py:25 …",
        "    2 node-b␛[2J             -     -     -     - "]


def test_at_200_cells_every_phase_and_the_straggler_named():
    table = rank_table(job(), 196, {1: "straggler"})
    header, slow = table[1].plain, table[3].plain
    assert header.split()[:12] == ["RANK", "HOST", "PID", "WAIT", "COMP", "DATA", "PY", "H2D", "CKPT", "GPU", "BUSY",
                                   "AT"]
    assert slow.startswith("◀   1 node-a") and slow.endswith(f"{SITE}  ◀ straggler")
    assert all(line.cell_len <= 196 for line in table)


def test_steps_show_where_known_and_an_unreadable_rank_says_why():
    ranks = (RankFigures(0, "h", pid=10, steps=1200, shares=(("compute", 1.0),), samples=50),
             RankFigures(1, "h", pid=11, steps=1199, samples=0))
    lines = [line.plain for line in rank_table(job(ranks, stacks=(RankStacks(11, 1, 0, 0.0, message="ptrace "
                                                                                "not permitted"),)), 76)]
    assert "STEPS" in lines[1] and " 1200 " in lines[2]
    assert lines[3].rstrip().endswith("ptrace not permitted")


def test_a_single_process_gets_no_table_but_its_stack_line():
    assert rank_table(job(RANKS[:1]), 76) == []
    panel = JobPanel()
    panel.show(job(RANKS[:1], stacks=(RankStacks(510, None, 40, 4.0, (("compute", 1.0),)),)), {}, {}, {})
    text = "\n".join(line.plain for line in panel.lines(76))
    assert "Where the time goes" in text and "Ranks ·" not in text


def test_the_job_panel_shows_the_table_in_place_of_the_per_rank_lines():
    panel = JobPanel()
    stacks = (RankStacks(510, 0, 130, 13.0, (("collective", 0.91),)), RankStacks(511, 1, 140, 14.0, (("other", 0.7),)))
    panel.show(job(stacks=stacks), {}, {}, {}, {1: "straggler"})
    text = [line.plain for line in panel.lines(76)]
    assert any(line.startswith("◀   1 node-a") for line in text)
    assert not any(line.startswith("  rank 0 (pid 510):") for line in text)


@given(st.text(max_size=40), st.integers(40, 240))
def test_any_host_label_keeps_every_row_within_the_width(host, width):
    ranks = (RankFigures(0, host, pid=1, shares=(("collective", 0.5),), samples=30, site=host),
             RankFigures(1, host, pid=2, samples=0))
    for line in rank_table(job(ranks), width, {0: "straggler"}):
        assert line.cell_len <= width and "\x1b" not in line.plain


def test_ranks_all_on_one_host_give_the_host_column_to_busy_at_below_wide():
    ranks = tuple(RankFigures(i, "dgx-a100-demo", pid=41000 + i, shares=(("compute", 0.8), ("collective", 0.12)),
                              samples=100, site="train.py:188 forward_backward") for i in range(2))
    narrow = [line.plain for line in rank_table(job(ranks), 76)]
    assert narrow[1].split()[:3] == ["RANK", "PID", "WAIT"]
    assert narrow[2] == "    0   41000   12%   80%     ·     · train.py:188 forward_backward"
    wide = rank_table(job(ranks), 196)
    assert wide[1].plain.split()[:2] == ["RANK", "HOST"] and "dgx-a100-demo" in wide[2].plain


def nccl_job(size: int, stuck: int, dead: int) -> JobSnapshot:
    """A job NCCL's RAS describes: two ranks here, the rest on other hosts, one behind and one dead."""
    from hwtop.model.ras import NcclView

    ranks = tuple(RankFigures(i, "here" if i < 2 else f"10.0.{i // 256}.{i % 256}", (1000 if i < 2 else 50000) + i,
                              gpu=i % 8, collectives=(("AllReduce", 6650 - (i == stuck)),), lag=int(i == stuck),
                              nccl_state="DEAD" if i == dead else "RUNNING", nccl_only=i >= 2,
                              samples=40 if i < 2 else 0, shares=(("collective", 0.9),) if i < 2 else ())
                  for i in range(size))
    job = JobSnapshot("pid 1000", (1000,), "running", (), None, 0, ranks=ranks)
    return replace(job, nccl=NcclView("127.0.0.1:28028", "NCCL_RAS_ADDR of pid 1000", (), 3, 0.0, "json",
                                      errors=("01:02:03 broken JSON answer (x)",)))


def test_every_node_ranks_worst_first_with_nccl_state_and_lag():
    lines = [line.plain for line in rank_table(nccl_job(8, stuck=5, dead=6), 120)]
    assert lines[0].startswith("NCCL RAS at 127.0.0.1:28028") and "broken JSON answer" in lines[1]
    rows = [line for line in lines if line[:5].strip().isdigit()]
    assert [int(line[:5]) for line in rows] == [6, 5, 0, 1, 2, 3, 4, 7]  # dead, then one behind, then the rest
    assert "DEAD" in rows[0] and "10.0.0.6" in rows[0] and "50006" in rows[0]
    assert "10.0.0.5" in rows[1] and rows[1].split()[4] == "1"


def test_thousands_of_ranks_draw_a_bounded_table():
    from hwtop.widgets.job_ranks import MAX_ROWS

    lines = [line.plain for line in rank_table(nccl_job(4096, stuck=4000, dead=3000), 120)]
    rows = [line for line in lines if line[:5].strip().isdigit()]
    assert len(rows) == MAX_ROWS and int(rows[0][:5]) == 3000 and int(rows[1][:5]) == 4000
    assert lines[-1].strip().startswith(f"… and {4096 - MAX_ROWS} more ranks")


VERDICTS = Verdicts((Verdict(0, "node-a", "inside-collective", "waits in all_reduce #26", pid=510),
                     Verdict(1, "node-a", "before-collective", "never launched all_reduce #26", pid=511, blamed=True)))


def test_state_says_each_ranks_verdict_in_its_short_words_and_a_dash_where_none():
    lines = [line.plain for line in rank_table(job(), 76, {1: "never reached the collective"}, verdicts=VERDICTS)]
    header = next(line for line in lines if line.lstrip().startswith("RANK"))
    assert header.split()[:3] == ["RANK", "STATE", "HOST"]
    rows = {line[1:5].strip(): line[6:20] for line in lines[lines.index(header) + 1:]}
    assert rows == {"0": SHORT["inside-collective"].ljust(14), "1": "never launched", "2": "-".ljust(14)}
    assert "STATE: each rank's verdict, as the findings judge it" in " ".join(lines[:lines.index(header)])
    assert all(len(line) <= 76 for line in lines)


def test_no_verdicts_no_state_column():
    lines = [line.plain for line in rank_table(job(), 196)]
    assert not any("STATE" in line for line in lines)


def test_the_job_panel_takes_the_states_from_its_frame():
    frame = Frame(replace(host_snapshot(), job=job()), verdicts=VERDICTS)
    panel = JobPanel()
    panel.take(View(frame, Thresholds(), 120, 40))
    panel.draw(40)
    text = [line.plain for line in panel.lines(120)]
    assert any(line.startswith("    1 never launched node-a") for line in text), text
    panel.take(View(replace(frame, verdicts=None), Thresholds(), 120, 40))
    panel.draw(40)
    assert not any("STATE" in line.plain for line in panel.lines(120))
