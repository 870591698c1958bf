"""On this machine, a process placed in a real cgroup where Slurm's cgroup v2 plugin places a step's task
(`system.slice/slurmstepd.scope/job_4242/step_0/user/task_0`, or the v1 plugin's `slurm/uid_U/job_4242/step_0/
task_0` in the freezer hierarchy where no cgroup v2 hierarchy is mounted): the monitor's table shows its job, `hwtop
--job slurm:4242` and `doctor --job slurm:4242` focus on it, and the exporter's series of a demo GPU it holds carry
`hpc_job`. Needs root (to make a cgroup and move a process into it): skipped, saying why, without. The cgroups are
removed afterwards, the process first."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from hwtop.demo.nvml import demo_library
from hwtop.demo.profiles import GIB, DemoProcess
from hwtop.exporter.metrics import families
from hwtop.exporter.text import render
from hwtop.probes.gpu import NvmlProbe
from hwtop.session.sampler import RealHost, Sampler
from tests.exporter.test_owner_labels import series
from tests.tmux_pane import hwtop_command, tmux

ROOT = Path(__file__).resolve().parents[2]
JOB = "4242"
BUSY = "while True: sum(range(1000))"

pytestmark = pytest.mark.slow


def _hierarchy() -> tuple[Path, str]:
    """(the mount to make the job's cgroups in, the path under it), as Slurm would on this box."""
    for mount in (Path("/sys/fs/cgroup"), Path("/sys/fs/cgroup/unified")):
        if (mount / "cgroup.controllers").exists():
            return mount, f"system.slice/slurmstepd.scope/job_{JOB}/step_0/user/task_0"
    return Path("/sys/fs/cgroup/freezer"), f"slurm/uid_{os.getuid()}/job_{JOB}/step_0/task_0"


@pytest.fixture(scope="module")
def job_process() -> Iterator[int]:
    """A busy Python process moved into the job's cgroup; its pid."""
    if os.geteuid() != 0:
        pytest.skip("making a cgroup and moving a process into it needs root")
    mount, relative = _hierarchy()
    made: list[Path] = []
    path = mount
    try:
        for part in relative.split("/"):
            path = path / part
            if not path.exists():
                path.mkdir()
                made.append(path)
    except OSError as error:
        for directory in reversed(made):
            directory.rmdir()
        pytest.skip(f"cannot make a cgroup here ({error}): the container forbids it")
    process = subprocess.Popen([sys.executable, "-c", BUSY])
    try:
        try:
            (path / "cgroup.procs").write_text(str(process.pid))
        except OSError as error:
            pytest.skip(f"cannot move a process into {path} ({error})")
        assert f"job_{JOB}/step_0" in Path(f"/proc/{process.pid}/cgroup").read_text()
        yield process.pid
    finally:
        process.kill()
        process.wait()
        for directory in reversed(made):  # a cgroup is removed once its last process has left
            with contextlib.suppress(OSError):
                for _ in range(50):
                    try:
                        directory.rmdir()
                        break
                    except OSError:
                        time.sleep(0.1)  # the killed process leaves its cgroup as it is reaped
        assert not any(directory.exists() for directory in made)


def _tmux_screen(args: str, wanted: list[str], tmp_path: Path) -> str:
    """Run `hwtop ARGS` in a tmux pane until every string of `wanted` is on screen (or 40 s); the screen."""
    if shutil.which("tmux") is None:
        pytest.skip("tmux is not installed")
    session = f"hwtop-owner-{uuid.uuid4().hex[:8]}"
    command = hwtop_command(args, tmp_path)
    subprocess.run(["tmux", "new-session", "-d", "-s", session, "-x", "200", "-y", "60", command], check=True)
    try:
        end = time.monotonic() + 40
        screen = ""
        while time.monotonic() < end:
            screen = tmux("capture-pane", "-p", "-t", session)
            if all(text in screen for text in wanted):
                break
            time.sleep(0.3)
        return screen
    finally:
        tmux("kill-session", "-t", session)


def test_the_table_shows_its_job(job_process: int, tmp_path: Path) -> None:
    screen = _tmux_screen("--no-gpu --interval 0.5", ["OWNER", f"{job_process} "], tmp_path)
    row = next((line for line in screen.splitlines() if f" {job_process} " in line), None)
    assert row is not None and f"job {JOB}" in row, screen


def test_job_slurm_focuses_on_it(job_process: int, tmp_path: Path) -> None:
    screen = _tmux_screen(f"--no-gpu --interval 0.5 --job slurm:{JOB}", [f"Slurm job {JOB}", str(job_process)],
                          tmp_path)
    assert f"Slurm job {JOB}" in screen and str(job_process) in screen, screen
    doctor = subprocess.run([sys.executable, "-m", "hwtop", "doctor", "--job", f"slurm:{JOB}", "--seconds", "2",
                             "--no-gpu"], capture_output=True, text=True, timeout=120, check=False,
                            env={**os.environ, "PYTHONPATH": str(ROOT)}, cwd=ROOT)
    assert doctor.returncode in (0, 1), doctor.stderr
    assert f"watching Slurm job {JOB}: running, 1 process(es)" in doctor.stdout, doctor.stdout


def test_its_demo_gpu_series_carry_hpc_job(job_process: int) -> None:
    library = demo_library("dgx-a100")
    for card in library.world.cards:  # the demo's own ranks are not processes here: GPU 0 is held by ours alone
        card.processes.clear()
    library.add_process(DemoProcess(0, job_process, "compute", 20 * GIB, "python"))
    probe = NvmlProbe(library.pynvml, proc_root="/proc", source="demo:dgx-a100")
    sampler = Sampler(gpu=probe, host=RealHost("/", process_limit=100_000), process_limit=100_000)
    try:
        sampler.sample()
        snapshot = sampler.sample()
    finally:
        sampler.close()
    util = series(render(families(snapshot, (), "test")).decode(), "DCGM_FI_DEV_GPU_UTIL")
    assert {s["gpu"]: s["hpc_job"] for s in util} == {"0": JOB, **{str(i): "" for i in range(1, 8)}}
