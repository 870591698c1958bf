"""Issue 55, point 4: the demo is one world. A two-node job is launched as two nodes (torchrun's rendezvous, its
ranks' WORLD_SIZE and LOCAL_WORLD_SIZE, NCCL's communicator, the job's telemetry all say 16 ranks, eight here);
each figure is read where a user reads it, beside the others it must agree with."""

from __future__ import annotations

import argparse
import shlex

import pytest

from hwtop.model.snapshot import Snapshot
from tests.small_screen import rank_cells, screen_lines, started
from tests.tui.screens import lived_through, story_snapshots

# A few cases run in the fast suite, on story plays other fast tests share (tests/tui/screens.py caches each), the
# rest with the slow ones.
SLOW = pytest.mark.slow
TWO_NODE_STORIES = ("straggler", pytest.param("nccl-hang", marks=SLOW), pytest.param("nccl-ethernet", marks=SLOW))


def torchrun_args(cmdline: str) -> argparse.Namespace:
    """torchrun's own options (torch/distributed/run.py), as it reads them from its command line."""
    parser = argparse.ArgumentParser(prog="torchrun")
    parser.add_argument("--nnodes", default="1")
    parser.add_argument("--nproc_per_node", "--nproc-per-node", default="1")
    parser.add_argument("--rdzv_backend", "--rdzv-backend", default="static")
    parser.add_argument("--rdzv_endpoint", "--rdzv-endpoint", default="")
    parser.add_argument("--rdzv_id", "--rdzv-id", default="none")
    parser.add_argument("--standalone", action="store_true")
    parser.add_argument("script")
    parser.add_argument("script_args", nargs=argparse.REMAINDER)
    argv = shlex.split(cmdline)
    return parser.parse_args(argv[argv.index("/usr/local/bin/torchrun") + 1:])


def launched(snapshot: Snapshot) -> argparse.Namespace:
    launcher = next(p for p in snapshot.processes if p.name == "torchrun")
    assert launcher.cmdline is not None
    return torchrun_args(launcher.cmdline)


@pytest.mark.parametrize("story", TWO_NODE_STORIES)
@pytest.mark.slow  # over the fast suite's minute on two cores (--durations)
def test_a_two_node_job_is_launched_as_two_nodes_and_every_reader_counts_16_ranks(story: str) -> None:
    snapshot = story_snapshots(f"dgx-a100:{story}", seconds=30.0, step=10.0)[-1]
    args = launched(snapshot)
    assert snapshot.host is not None and not args.standalone
    assert (args.nnodes, args.nproc_per_node, args.rdzv_backend) == ("2", "8", "c10d")
    host, _, port = args.rdzv_endpoint.rpartition(":")
    assert (host, port) == (snapshot.host.hostname, "29400")  # this node runs rank 0, so the rendezvous
    assert snapshot.job is not None and snapshot.workload is not None and snapshot.workload.config is not None
    ranks = [p for p in snapshot.job.processes if p.role.startswith("rank")]
    assert len(ranks) == 8
    for process in ranks:  # torchrun's environment: RANK = GROUP_RANK x LOCAL_WORLD_SIZE + LOCAL_RANK, GROUP_RANK 0
        assert (process.world_size, process.local_world_size) == (16, 8)
        assert process.rank == 0 * 8 + (process.local_rank or 0)
        assert process.cmdline is not None and "--local" not in process.cmdline  # torchrun passes it in the env
    assert snapshot.workload.config.world_size == 16
    nccl = snapshot.job.nccl
    if nccl is not None and nccl.main is not None:  # the stories NCCL's RAS tells: its communicator is the world
        assert nccl.main.comm.size == 16
        assert {r.host for r in nccl.main.comm.ranks} == {"10.0.0.1", "10.0.0.2"}
        assert {dict(p.nccl_env).get("NCCL_RAS_ADDR") for p in ranks} == {nccl.address}  # where it says it asked


@SLOW
def test_a_one_node_job_stays_standalone() -> None:
    snapshot = story_snapshots("dgx-a100:amp", seconds=30.0, step=10.0)[-1]
    args = launched(snapshot)
    assert args.standalone and args.nnodes == "1" and args.nproc_per_node == "8"
    assert snapshot.job is not None
    assert {(p.world_size, p.local_world_size) for p in snapshot.job.processes if p.role.startswith("rank")} == \
        {(8, 8)}


@SLOW
async def test_the_job_view_shows_the_two_node_launcher() -> None:
    app = lived_through(story_snapshots("dgx-a100:straggler", seconds=30.0, step=10.0))
    async with app.run_test(size=(200, 60)) as pilot:
        await started(app, pilot)
        await pilot.press("j")
        await pilot.pause()
        launcher = next(line for line in screen_lines(app) if " launcher " in line)
        assert "torchrun --nnodes 2 --nproc_per_" in launcher and "--standalone" not in launcher


@pytest.mark.slow  # doctor over 30 s of the story on its fake clock: ~2 s
def test_doctor_says_the_two_node_job_has_16_ranks_8_of_them_here(monkeypatch, capsys) -> None:
    import json

    from hwtop.cli import doctor
    from hwtop.cli.doctor import watch
    from hwtop.demo.machine import demo_sampler
    from hwtop.session.session import Session
    from tests.cli.test_doctor_advice import FakeTime

    clock = [0.0]
    monkeypatch.setattr(watch, "time", FakeTime(clock))
    sampler = demo_sampler("dgx-a100", "straggler", seed=7, clock=lambda: clock[0],
                           wall=lambda: 1_796_200_000.0 + clock[0])
    doctor.doctor_command(Session(sampler), 30.0, 2.0, None, True)
    job = json.loads(capsys.readouterr().out)["job"]
    assert (job["world_size"], job["local_world_size"], job["ranks"]) == (16, 8, 8)
    assert job["nccl"]["communicators"][0]["size"] == 16


# ----- the network: a cross-node all-reduce of the model's gradients at the job's step rate -----

RESNET50_GRADIENTS = 25_557_032 * 4  # torchvision's resnet50 parameters, fp32 gradients (autocast keeps them)
MB = 1e6


def ring_bytes_per_node(world: int, gradients: float) -> float:
    """NCCL's ring all-reduce: each rank sends 2(n-1)/n of the gradients a step; each ring crosses into and out of
    every node once, so a node's ports together carry that much each way."""
    return 2 * (world - 1) / world * gradients


def port_rates(lines: list[str]) -> dict[str, tuple[float, float]]:
    """(rx, tx) in MB/s of each port the network panel lists, as it reads."""
    import re

    unit = {"B/s": 1e-6, "kB/s": 1e-3, "MB/s": 1.0, "GB/s": 1e3}
    out = {}
    for line in lines:
        for name, rx, rx_unit, tx, tx_unit in re.findall(
                r"(\S+)\s+(?:IB|Eth)\s+\d+Gb/s rx\s+\d+%\s+([\d.]+)(B/s|kB/s|MB/s|GB/s) tx\s+\d+%\s+([\d.]+)"
                r"(B/s|kB/s|MB/s|GB/s)", line):
            out[name] = (float(rx) * unit[rx_unit], float(tx) * unit[tx_unit])
    return out


@pytest.mark.parametrize(("story", "seconds"), [pytest.param("straggler", 10.0, marks=SLOW), ("straggler", 60.0),
                                                pytest.param("nccl-hang", 20.0, marks=SLOW)])
@pytest.mark.slow  # over the fast suite's minute on two cores (--durations)
async def test_infiniband_carries_the_all_reduce_of_the_model_at_the_step_rate(story: str, seconds: float) -> None:
    """Issue 55: the two-node job's InfiniBand ports read a few kB/s. Each HDR port beside a GPU carries its share
    of a node's all-reduce traffic: 2(16-1)/16 x 102 MB of ResNet-50's gradients per step, over eight ports."""
    app = lived_through(story_snapshots(f"dgx-a100:{story}", seconds=seconds, step=5.0))
    async with app.run_test(size=(200, 60)) as pilot:
        await started(app, pilot)
        workload = app.snapshot.workload if app.snapshot is not None else None
        assert workload is not None and workload.ranks[0].step_time_s is not None
        per_port = ring_bytes_per_node(16, RESNET50_GRADIENTS) / workload.ranks[0].step_time_s / 8 / MB
        rates = port_rates(screen_lines(app))
        ib = {name: rate for name, rate in rates.items() if name.startswith("mlx5_")}
        assert len(ib) >= 4, rates  # the busiest ports are listed, the rest said to be quieter
        for name, (rx, tx) in ib.items():
            assert rx == pytest.approx(per_port, rel=0.05) and tx == pytest.approx(per_port, rel=0.05), (name, rx)


def test_a_hung_job_sends_nothing_over_the_fabric() -> None:
    snapshot = story_snapshots("dgx-a100:nccl-hang", seconds=70.0, step=5.0)[-1]
    assert all((n.rx_bytes_per_s or 0) < 1e4 for n in snapshot.nics if n.kind == "infiniband")


# ----- NCCL counts the job's steps -----

@SLOW  # a Session over the story (its findings); tests/demo/test_ras_story.py holds #582 in the fast suite
def test_nccl_counts_the_collectives_of_the_steps_the_job_reports() -> None:
    """The hang's "has not launched AllReduce #N" is the last AllReduce of the step after the one the ranks report
    (a ResNet-50 step launches DDP's five gradient buckets and the loss's AllReduce); before, #1060 at step 96."""
    import re

    from tests.demo.played import play

    last = play("nccl-hang", 70.0, step=5.0)[-1]
    hang = next(f for f in last.findings if f.id == "collective-hang")
    found = re.search(r"has not launched AllReduce #(\d+)", hang.evidence[0])
    assert found is not None
    number = int(found.group(1))
    workload = last.snapshot.workload
    assert workload is not None and len({r.step for r in workload.ranks}) == 1
    step = workload.ranks[0].step
    assert f"ranks 0-7 at step {step}" in " ".join(hang.evidence)
    assert number == 6 * (step + 1)


# ----- nccl-hang: a rank that waits is shown where it waits -----

SCROLLBAR = "▁▂▃▄▅▆▇█"  # Textual's scrollbar thumb ends in eighth blocks, in the view's two rightmost columns


def rank_rows(lines: list[str]) -> dict[int, tuple[dict[str, str], str]]:
    """The job view's rank table: rank -> (its cells by column, its BUSY AT text)."""
    out: dict[int, tuple[dict[str, str], str]] = {}
    columns: list[str] = []
    for raw in lines:
        line = raw[raw.index("│") + 1:raw.rindex("│")] if raw.count("│") >= 2 else raw  # inside the panel's border
        if line.strip().startswith("RANK ") and "BUSY AT" in line:
            columns = line.replace("BUSY AT", "BUSY_AT").split()
            busy_at = line.index("BUSY AT")
            continue
        if not columns:
            continue
        cells = rank_cells(line[:busy_at].replace("◀", " "))
        if not cells or not cells[0].isdigit():
            columns = []
            continue
        busy = line[busy_at:].split("◀")[0].rstrip(" " + SCROLLBAR).strip()  # the view's scrollbar at its edge
        out[int(cells[0])] = (dict(zip(columns, cells, strict=False)), busy)
    return out


@pytest.mark.parametrize("size", [(200, 60), pytest.param((120, 40), marks=SLOW)])
@pytest.mark.slow  # over the fast suite's minute on two cores (--durations)
async def test_ranks_waiting_in_a_hung_collective_are_busy_where_they_wait(size: tuple[int, int]) -> None:
    """Issue 55: ranks at WAIT 100% showed BUSY AT `train.py:188 forward`, the stuck rank's own site."""
    app = lived_through(story_snapshots("dgx-a100:nccl-hang", seconds=70.0, step=5.0))
    async with app.run_test(size=size) as pilot:
        await started(app, pilot)
        job = app.snapshot.job if app.snapshot is not None else None
        assert job is not None
        waits_at = {s.rank: s.site("collective") for s in job.stacks}
        await pilot.press("j")
        await pilot.pause()
        rows = rank_rows(screen_lines(app))
        waiting = {rank: busy for rank, (cells, busy) in rows.items() if cells.get("WAIT") == "100%"}
        assert len(waiting) == 7, rows
        for rank, busy in waiting.items():
            assert waits_at[rank] is not None and waits_at[rank].startswith(busy.rstrip("…")), (rank, busy)
            assert "forward" not in busy
        stuck_busy = rows[5][1]
        assert stuck_busy.startswith("train.py:188 forward")  # the one that runs: where it runs


@pytest.mark.slow  # over the fast suite's minute on two cores (--durations)
async def test_a_range_of_one_value_is_said_as_one_value() -> None:
    """Issue 55: "the other 7 ranks wait in a collective 100%-100% of the time"; the opened finding says 100%."""
    import re

    from hwtop.tui.advice_screen import AdviceScreen

    app = lived_through(story_snapshots("dgx-a100:nccl-hang", seconds=70.0, step=5.0))
    async with app.run_test(size=(200, 60)) as pilot:
        await started(app, pilot)
        await pilot.press("a")
        await pilot.pause()
        await pilot.pause()
        text = "\n".join(screen_lines(app))
        assert isinstance(app.screen, AdviceScreen) or "seen" in text
        assert "Rank 5 never reached the collective" in text, text
        assert not [m for m in re.findall(r"(\d+)%-(\d+)%", text) if m[0] == m[1]], text


# ----- oom: the finding's batch and the memory it cites are the story's own -----

@pytest.mark.slow  # over the fast suite's minute on two cores (--durations)
async def test_the_oom_finding_and_its_fix_name_the_batch_the_ranks_ran() -> None:
    """Issue 55: every rank ran batch 256 while the finding said "batch 128 was the largest that fit" and its fix
    "Halve the batch size (from 128 ...)": the story tried no other batch, so the finding says none, and the fix
    starts from the batch that failed."""
    import re

    played = story_snapshots("dgx-a100:oom", seconds=60.0, step=5.0)
    climbing = played[:11]  # to 50 s
    commands = {p.cmdline for p in climbing[-1].processes if p.name == "python"}
    batches = {int(m.group(1)) for c in commands if c for m in [re.search(r"--batch-size (\d+)", c)] if m}
    workload = climbing[-1].workload
    assert workload is not None and workload.config is not None
    assert batches == {r.batch_size for r in workload.ranks} == {workload.config.batch_size} == {256}
    app = lived_through(played)
    async with app.run_test(size=(200, 60)) as pilot:
        await started(app, pilot)
        assert app.frame is not None
        oom = next(f for f in app.frame.findings if f.id == "cuda-oom" and f.severity == "critical")
        await pilot.press("a")
        await pilot.pause()
        await pilot.pause()
        text = "\n".join(screen_lines(app))
        said = [int(b) for b in re.findall(r"ran out of device memory at batch (\d+)", text)]
        assert said and set(said) == {256}, text
        assert "largest that fit" not in text and "largest that fit" not in " ".join(oom.evidence)
        assert re.findall(r"Halve the batch size \(from (\d+)", text) == ["256"], text


@pytest.mark.parametrize("seconds", [pytest.param(30.0, marks=SLOW), pytest.param(45.0, marks=SLOW), 50.0])
async def test_the_leaking_rank_holds_one_figure_on_every_panel(seconds: float) -> None:
    """Its GPU in the GPU panel, its process in the table and its line in the workload pane read one figure as
    it climbs (one function of the story, demo/story.py rank_held); the other ranks hold what they held."""
    import re

    app = lived_through(story_snapshots("dgx-a100:oom", seconds=60.0, step=5.0)[:int(seconds // 5) + 1])
    async with app.run_test(size=(200, 60)) as pilot:
        await started(app, pilot)
        lines = screen_lines(app)
        panel = [float(v) for line in lines for v in re.findall(r" mem [█░]+\s+([\d.]+)G/80G", line)]
        workload = {rank: float(gib) for line in lines
                    for rank, gib in re.findall(r"│ rank (\d+(?:-\d+ x\d+)?)\s.* mem\s+([\d.]+)G", line)}
        process = [float(v) for line in lines for v in re.findall(r"^│ 41003 .*?\s3\s+([\d.]+)G ", line)]
        assert len(panel) == 8 and process, (panel, process)
        assert panel[3] == workload["3"] == process[0], (panel, workload, process)
        assert {value for i, value in enumerate(panel) if i != 3} == {v for k, v in workload.items() if k != "3"}
        assert panel[3] > panel[0] + 5


# ----- one name per host -----

@pytest.mark.slow  # over the fast suite's minute on two cores (--durations)
async def test_the_straggler_s_host_has_one_name_on_every_line() -> None:
    """Issue 55: the straggler's host was "10.0.0.1" on one line of its finding and "dgx-a100-demo" on the next.
    Its name is the header's and the job view's; NCCL's address stands beside that name where NCCL's words give
    one ("on dgx-a100-demo at 10.0.0.1"), and the other node, known only by its address, keeps it."""
    import re

    app = lived_through(story_snapshots("dgx-a100:straggler", seconds=60.0, step=5.0))
    async with app.run_test(size=(200, 60)) as pilot:
        await started(app, pilot)
        assert app.frame is not None and app.snapshot is not None and app.snapshot.host is not None
        hostname = app.snapshot.host.hostname
        assert hostname in screen_lines(app)[0]  # the header
        finding = next(f for f in app.frame.findings if f.id == "rank-straggler")
        names = []
        for line in (finding.title, *finding.evidence, *finding.fix):
            names += re.findall(r"rank 3 \(pid 41003 on ([^,)]+)", line)
            names += re.findall(r"rank 3 \(pid 41003, host ([^,)]+)\)", line)
            for address in re.findall(r"(?<![\w.])(10\.0\.0\.\d+)(?![\d:])", line):
                assert f"{hostname} at {address}" in line, line  # an address only beside the name
        assert len(names) >= 2 and set(names) == {f"{hostname} at 10.0.0.1", hostname}, names
        await pilot.press("j")
        await pilot.pause()
        rows = rank_rows(screen_lines(app))
        assert rows[3][0]["HOST"] == hostname and {rows[r][0]["HOST"] for r in range(8, 16)} == {"10.0.0.2"}


# ----- a rank's time: its stack shares against its CPU -----

@pytest.mark.parametrize(("story", "seconds"), [("starved", 30.0), pytest.param("thermal", 60.0, marks=SLOW)])
@pytest.mark.slow  # over the fast suite's minute on two cores (--durations)
async def test_a_rank_on_the_cpu_as_long_as_its_stacks_say_it_computes(story: str, seconds: float) -> None:
    """starved: the job view said WAIT 12% COMP 4% DATA 81% for ranks at 17% CPU beside it (the collective share
    was taken of the whole step where the ranks wait only in the part their GPU works); a rank's main thread is
    on a CPU while it computes or runs its own Python, asleep while it waits. thermal: "the others wait for it
    each step" while every rank, the hot GPU's too, read WAIT 12%: the hot GPU's rank now waits least."""
    import re

    app = lived_through(story_snapshots(f"dgx-a100:{story}", seconds=seconds, step=5.0))
    async with app.run_test(size=(120, 40)) as pilot:
        await started(app, pilot)
        await pilot.press("j")
        await pilot.pause()
        lines = screen_lines(app)
        rows = rank_rows(lines)
        cpu = {int(rank): float(value) for line in lines
               for rank, value in re.findall(r"│\s+\d+\s+└ rank (\d+)\s+[RS]\s+([\d.]+) ", line)}
        job = app.snapshot.job if app.snapshot is not None else None
        assert job is not None and cpu, lines  # the rows below the fold: the figure their rows draw
        cpu |= {p.rank: round(p.cpu_percent or 0.0) for p in job.processes if p.rank is not None and p.rank not in cpu}
        assert len(rows) == 8 and len(cpu) == 8, (rows, cpu)
        for rank, (cells, _) in rows.items():
            on_cpu = sum(float(cells[name].rstrip("%")) for name in ("COMP", "PY") if cells[name] != "·")
            assert on_cpu == pytest.approx(cpu[rank], abs=3.0), (rank, cells, cpu[rank])
        if story == "thermal":
            waits = {rank: float(cells["WAIT"].rstrip("%")) for rank, (cells, _) in rows.items()}
            assert min(waits, key=waits.__getitem__) == 2 and sorted(waits.values())[1] > 3 * waits[2], waits


def test_a_job_torchrun_tore_down_keeps_its_last_view() -> None:
    """After the OOM the job view said "ENDED 0 process(es) (0 seen)" of a job it had watched with 73: as the job
    probe keeps an ended job, its launcher and ranks stay as rows, gone, and what was seen is said."""
    job = story_snapshots("dgx-a100:oom", seconds=60.0, step=5.0)[-1].job
    assert job is not None and job.status == "ended" and job.pids_seen == 73
    gone = [p for p in job.processes if not p.alive]
    assert [p.role for p in gone] == ["launcher", *(f"rank {r}" for r in range(8))]
