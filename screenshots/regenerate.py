"""Regenerate the screenshots: the real app on demo machines only (a whole simulated host: no pid, user, command
line or disk of the machine that takes them), as SVG (Textual) and PNG.

    python -m screenshots.regenerate          # needs the test extra (cairosvg) for the PNGs
    python -m screenshots.regenerate --real   # also the shots of the embedded job on this machine (needs torch)
"""

from __future__ import annotations

import asyncio
import os
import sys
from typing import Any

from hwtop.cli.main import make_sampler
from hwtop.tui.app import HwtopApp

HERE = os.path.dirname(os.path.abspath(__file__))

SHOTS = [
    ("main-80x24", "gtx1660s", (80, 24)),
    ("main-200x60", "gtx1660s", (200, 60)),
    ("dgx-a100-200x60", "dgx-a100", (200, 60)),
    ("dgx-a100-80x24", "dgx-a100", (80, 24)),
    ("gtx1660s-80x24", "gtx1660s", (80, 24)),
    ("h200-120x40", "h200", (120, 40)),
    ("topology-dgx-a100-200x60", "dgx-a100", (200, 60), "t"),
    ("topology-dgx-a100-80x24", "dgx-a100", (80, 24), "t"),
    ("topology-ws-2x3090-120x40", "ws-2x3090", (120, 40), "t"),
    ("topology-main-80x24", "gtx1660s", (80, 24), "t"),
    ("dgx-a100-shared-80x24", "dgx-a100:shared", (80, 24)),  # two Slurm jobs of two users (issue 44)
    ("dgx-a100-shared-200x60", "dgx-a100:shared", (200, 60)),
]
NO_GPU = {"main-80x24", "main-200x60", "topology-main-80x24"}  # the "no GPU" shots: a desktop with GPUs off
# One shot per story (demo/story.py), at the scenario second where its finding shows, the advice pane open.
STORY_SHOTS = [
    ("story-starved-160x45", "starved", 45.0),
    ("story-nccl-hang-160x45", "nccl-hang", 50.0),
    ("story-nccl-hang-job-120x40", "nccl-hang", 70.0, "j"),  # NCCL's RAS view: both nodes' ranks (issue 42)
    ("story-oom-160x45", "oom", 58.0),
    ("story-amp-160x45", "amp", 45.0),
    ("story-thermal-160x45", "thermal", 65.0),
    ("story-straggler-160x45", "straggler", 45.0),
    ("story-straggler-job-160x45", "straggler", 45.0, "j"),  # the job view: the ranks side by side
    ("story-nccl-ethernet-160x45", "nccl-ethernet", 70.0),
    # the README's data-loading shots, now from the demo's starved story
    ("workload-dataloader-bound-160x45", "starved", 40.0),
    ("advice-dataloader-bound-160x45", "starved", 45.0),
    ("advice-dataloader-bound-80x24", "starved", 45.0),
]
STORY_SPEED = 10.0  # scenario seconds per wall second: a story's minute in six seconds
# The embedded job, dataloader-bound on this machine's CPU (needs torch).
DATALOADER_BOUND = ["--scenario", "dataloader-bound", "--device", "cpu", "--world-size", "2", "--seconds", "120"]
WORKLOAD_SHOTS = [
    ("workload-dataloader-bound-160x45", (160, 45), DATALOADER_BOUND, False),
    # The advice pane with its data-loading finding open (a), as a user sees it a few seconds into the run.
    ("advice-dataloader-bound-160x45", (160, 45), DATALOADER_BOUND, True),
    ("advice-dataloader-bound-80x24", (80, 24), DATALOADER_BOUND, False),
]


async def capture_workload(name: str, size: tuple[int, int], job: list[str], open_advice: bool) -> str:
    app = HwtopApp(make_sampler(None, no_gpu=False), interval=0.5, workload_args=job)
    async with app.run_test(size=size) as pilot:
        for _ in range(300):  # the ranks start and report a few steps
            await pilot.pause(0.2)
            state = app.snapshot.workload if app.snapshot else None
            if state and state.ranks and all((r.step or 0) >= 5 for r in state.ranks):
                break
        if open_advice or name.startswith("advice"):
            for _ in range(150):  # the finding shows once its condition has held for the rule's hold time
                await pilot.pause(0.2)
                if app.frame is not None and app.frame.findings:
                    break
            await pilot.pause(0.6)
        if open_advice:
            await pilot.press("a")
            await pilot.pause(0.6)
        path = app.save_screenshot(filename=f"{name}.svg", path=HERE)
    return path


async def capture(name: str, demo: str | None, size: tuple[int, int], keys: str = "", ticks: int = 6) -> str:
    app = HwtopApp(make_sampler(demo, no_gpu=name in NO_GPU), interval=0.5)
    async with app.run_test(size=size) as pilot:
        while app.ticks < ticks:  # live values and some sparkline history
            await pilot.pause(0.2)
        if keys:
            await pilot.press(*keys)
            ticks = app.ticks + 2
            while app.ticks < ticks:
                await pilot.pause(0.2)
        path = app.save_screenshot(filename=f"{name}.svg", path=HERE)
    return path


async def capture_story(name: str, story: str, at_s: float, size: tuple[int, int] = (160, 45),
                        keys: str = "a") -> str:
    """The dgx-a100 demo playing `story` at STORY_SPEED, captured at scenario second `at_s`; the advice pane
    opened on its first finding (a) for the story and advice shots, or `keys` pressed (j: the job view)."""
    import time

    from hwtop.demo.machine import demo_sampler

    start = time.monotonic()

    def clock() -> float:
        return STORY_SPEED * (time.monotonic() - start)

    sampler = demo_sampler("dgx-a100", story, clock=clock, wall=lambda: 1_800_000_000.0 + clock())
    app = HwtopApp(sampler, interval=0.5)
    async with app.run_test(size=size) as pilot:
        while clock() < at_s:
            await pilot.pause(0.1)
        if not name.startswith("workload"):
            for key in keys:
                await pilot.press(key)
            await pilot.pause(0.6)
        return app.save_screenshot(filename=f"{name}.svg", path=HERE)


async def capture_replay(name: str, size: tuple[int, int]) -> str:
    """A recording made here of the dgx-a100 demo (the real recorder), played back and paused mid-way."""
    import tempfile

    from hwtop.recording.replay import ReplaySource
    from hwtop.recording.store import Recorder, load
    from hwtop.session.session import Session

    sampler = make_sampler("dgx-a100", no_gpu=False)
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "dgx.jsonl.gz")
        recorder = Recorder(path, 0.5)
        session = Session(sampler)
        for _ in range(24):
            recorder.write(session.tick())
            await asyncio.sleep(0.5)
        recorder.close()
        sampler.close()
        source = ReplaySource(load(path), interval_s=0.5, speed=2.0)
        app = HwtopApp(source, interval=0.5)
        async with app.run_test(size=size) as pilot:
            while source.index < 16:
                await pilot.pause(0.1)
            await pilot.press("p")
            await pilot.pause(0.3)
            return app.save_screenshot(filename=f"{name}.svg", path=HERE)


async def capture_fleet(name: str, size: tuple[int, int]) -> str:
    """Two live exporters (demo machines) and an address where nothing listens."""
    import threading

    from hwtop.exporter.server import make_exporter
    from hwtop.fleet.sources import DirectSource
    from hwtop.fleet.targets import exporter_url
    from hwtop.session.session import Session
    from hwtop.tui.fleet_app import FleetApp

    servers = []
    for profile in ("dgx-a100", "ws-2x3090"):
        sampler = make_sampler(profile, no_gpu=False)
        server, stop, _latest = make_exporter(Session(sampler).tick, "127.0.0.1", 0, 0.5, "screenshot")
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append((server, stop, sampler))
    await asyncio.sleep(1.5)
    targets = [f"127.0.0.1:{server.server_port}" for server, _, _ in servers] + ["127.0.0.1:9"]
    app = FleetApp(DirectSource([exporter_url(t) for t in targets], interval=1.0, timeout=1.0))
    try:
        async with app.run_test(size=size) as pilot:
            while any(v.error == "waiting for the first answer" for v in app.frame.hosts) or not app.frame.hosts:
                await pilot.pause(0.1)
            await pilot.pause(0.3)
            return app.save_screenshot(filename=f"{name}.svg", path=HERE)
    finally:
        for server, stop, sampler in servers:
            stop.set()
            server.shutdown()
            sampler.close()


async def capture_fleet_job(name: str, size: tuple[int, int]) -> str | None:
    """`hwtop fleet --prometheus URL --job pretrain` over two demo DGXs (node-a plays the straggler story) and a
    real Prometheus (Debian's; none installed: no shot), once the job view names rank 3 and its likely cause."""
    import json
    import subprocess

    from hwtop.fleet.sources import PrometheusSource
    from hwtop.tui.fleet_app import FleetApp
    from tests.prometheus_rig import HWTOP, PROMETHEUS, HwtopExporter, Prometheus

    if PROMETHEUS is None:
        print("prometheus not installed: no fleet job shot", file=sys.stderr)
        return None
    exporters = [HwtopExporter("dgx-a100:straggler", "node-a", ("--job-name", "pretrain")),
                 HwtopExporter("dgx-a100", "node-b")]
    prometheus = Prometheus({"train": [(e.target, "/metrics", {}) for e in exporters]})
    try:
        for _ in range(60):  # until the fleet's own judgement has its cause (the story throttles GPU3 at 20 s)
            answer = json.loads(subprocess.run([*HWTOP, "fleet", "--prometheus", prometheus.url, "--job", "pretrain",
                                                "--json", "--rank-window", "15"], capture_output=True,
                                               text=True, timeout=60).stdout)
            if ((answer.get("job") or {}).get("verdict") or {}).get("likely_cause"):
                break
            await asyncio.sleep(2)
        source = PrometheusSource(prometheus.url, interval=1.0, timeout=5.0, job="pretrain", job_window_s=15)
        app = FleetApp(source)
        async with app.run_test(size=size) as pilot:
            while app.frame.job is None or app.frame.job.verdict is None:
                await pilot.pause(0.2)
            await pilot.pause(0.5)
            return app.save_screenshot(filename=f"{name}.svg", path=HERE)
    finally:
        prometheus.close()
        for exporter in exporters:
            exporter.close()


async def capture_fleet_alerts(size: tuple[int, int]) -> list[str]:
    """`hwtop fleet --prometheus URL` once deploy/hwtop-alerts.yml fired on the nccl-hang story, in a real
    Prometheus (Debian's; none installed: no shot): the fleet opens on the alerts, firing first; enter on the hang
    opens the job's ranks, the hung rank named. docs/fleet.md's walk-through."""
    import json
    import subprocess

    from hwtop.fleet.sources import PrometheusSource
    from hwtop.tui.fleet.alerts_screen import FleetAlertsScreen
    from hwtop.tui.fleet_app import FleetApp
    from tests.deploy.alerts_rig import HangRig
    from tests.prometheus_rig import HWTOP, PROMETHEUS

    if PROMETHEUS is None:
        print("prometheus not installed: no fleet alert shots", file=sys.stderr)
        return []
    rig = HangRig("gpu-node-07", job_name="pretrain", external_url="http://prometheus:9090")
    width, height = size
    try:
        rig.wait_for("HwtopJobHung")
        for _ in range(60):  # until the fleet's own judgement of the job spans the hang (its 15 s window)
            answer = json.loads(subprocess.run([*HWTOP, "fleet", "--prometheus", rig.prometheus.url, "--job",
                                                "pretrain", "--json", "--rank-window", "15"], capture_output=True,
                                               text=True, timeout=60).stdout)
            if ((answer.get("job") or {}).get("verdict") or {}).get("kind") == "hang":
                break
            await asyncio.sleep(2)
        app = FleetApp(PrometheusSource(rig.prometheus.url, interval=1.0, timeout=5.0, job_window_s=15))
        async with app.run_test(size=size) as pilot:
            while not (isinstance(app.screen, FleetAlertsScreen) and app.screen.table.row_count):
                await pilot.pause(0.2)
            await pilot.pause(0.5)
            shots = [app.save_screenshot(filename=f"fleet-alerts-{width}x{height}.svg", path=HERE)]
            await pilot.press("enter")
            while app.frame.job is None or app.frame.job.verdict is None:
                await pilot.pause(0.2)
            await pilot.pause(0.5)
            shots.append(app.save_screenshot(filename=f"fleet-alert-job-{width}x{height}.svg", path=HERE))
            return shots
    finally:
        rig.close()


async def capture_job(name: str, size: tuple[int, int]) -> str:
    """hwtop --pid on the embedded job (2 CPU ranks, a DataLoader worker each), a rank's stack read with d."""
    import signal
    import subprocess

    from hwtop.probes.job import JobProbe
    from hwtop.session.sampler import Sampler

    job = subprocess.Popen([sys.executable, "-m", "hwtop.workload.job", "--device", "cpu", "--world-size", "2",
                            "--num-workers", "1", "--seconds", "120"], stdout=subprocess.PIPE,
                           stderr=subprocess.DEVNULL, text=True, start_new_session=True)
    try:
        steps, out = 0, job.stdout
        assert out is not None  # stdout=PIPE
        while steps < 4:
            steps += '"event": "step"' in out.readline()
        sampler = Sampler(job=JobProbe(roots=(job.pid,)))
        app = HwtopApp(sampler, interval=0.5, open_job=True)
        async with app.run_test(size=size) as pilot:
            while app.ticks < 8:
                await pilot.pause(0.2)
            panel: Any = getattr(app.screen, "panel")  # the job screen's panel  # noqa: B009
            rank = next(i for i, p in enumerate(panel.job.processes) if p.role == "rank 0")
            panel.cursor = rank
            await pilot.press("d")
            for _ in range(100):
                await pilot.pause(0.2)
                if panel.stack and "reading with py-spy" not in panel.stack[0].plain:
                    break
            await pilot.pause(0.5)
            return app.save_screenshot(filename=f"{name}.svg", path=HERE)
    finally:
        os.killpg(job.pid, signal.SIGKILL)
        job.wait()


async def capture_polish() -> list[str]:
    """The finish: tree view with a filter, the light and the no-colour themes. (No signal dialog: `k` would
    describe a real process of this machine by the demo's pid, so a demo has none to show.)"""
    from hwtop.demo.machine import demo_sampler

    paths = []
    sampler = demo_sampler("dgx-a100", workload=False)  # the table, not the job's pane, at 140x40
    app = HwtopApp(sampler, interval=0.5, hide=("disks",))
    async with app.run_test(size=(140, 40)) as pilot:
        while app.ticks < 4:
            await pilot.pause(0.2)
        await pilot.press("T", "slash", *"python", "enter")
        await pilot.pause(0.6)
        paths.append(app.save_screenshot(filename="processes-tree-filter-140x40.svg", path=HERE))
    for theme in ("light", "mono"):
        app = HwtopApp(make_sampler("dgx-a100", no_gpu=False), interval=0.5, theme=theme)
        async with app.run_test(size=(120, 40)) as pilot:
            while app.ticks < 6:
                await pilot.pause(0.2)
            paths.append(app.save_screenshot(filename=f"theme-{theme}-dgx-a100-120x40.svg", path=HERE))
    return paths


def to_png(svg: str) -> str | None:
    try:
        import cairosvg
    except ImportError:
        print("cairosvg not installed: SVG only", file=sys.stderr)
        return None
    png = svg[:-4] + ".png"
    with open(svg, encoding="utf-8") as handle:
        # cairo cannot fetch Textual's web font; a local monospace face keeps the cells aligned.
        text = handle.read().replace("Fira Code, monospace", "DejaVu Sans Mono")
        text = text.replace('"Fira Code"', '"DejaVu Sans Mono"')
    cairosvg.svg2png(bytestring=text.encode(), write_to=png, output_width=1600)
    return png


def main(argv: list[str] | None = None) -> None:
    real = "--real" in (sys.argv[1:] if argv is None else argv)
    for name, demo, size, *keys in SHOTS:
        svg = asyncio.run(capture(name, demo, size, "".join(keys)))
        print(svg, to_png(svg) or "")
    for name, story, at_s, *keys in STORY_SHOTS:
        width, height = name.rsplit("-", 1)[1].split("x")  # the size its name says: 80x24, 120x40, 160x45
        size = (int(width), int(height))
        svg = asyncio.run(capture_story(name, story, at_s, size, *keys))
        print(svg, to_png(svg) or "")
    for svg in (asyncio.run(capture_replay("replay-dgx-a100-160x45", (160, 45))),
                asyncio.run(capture_fleet("fleet-120x24", (120, 24))), *asyncio.run(capture_polish())):
        print(svg, to_png(svg) or "")
    svg = asyncio.run(capture_fleet_job("fleet-job-straggler-120x24", (120, 24)))
    if svg is not None:
        print(svg, to_png(svg) or "")
    for svg in asyncio.run(capture_fleet_alerts((120, 30))):
        print(svg, to_png(svg) or "")
    if not real:
        return
    try:
        import importlib.util

        has_torch = importlib.util.find_spec("torch") is not None
    except ValueError:
        has_torch = False
    for name, size, job, open_advice in WORKLOAD_SHOTS if has_torch else []:
        name = name.replace("-dataloader-bound", "-dataloader-bound-real")  # the demo's shots keep the plain names
        svg = asyncio.run(capture_workload(name, size, job, open_advice))
        print(svg, to_png(svg) or "")
    if has_torch:
        svg = asyncio.run(capture_job("job-focus-workload-200x50", (200, 50)))
        print(svg, to_png(svg) or "")


if __name__ == "__main__":
    main()
