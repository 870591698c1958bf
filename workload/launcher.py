"""Start the training job as a subprocess in its own process group, read its telemetry, and stop it whole.

No torch here: the monitor imports this, the job (`python -P -m hwtop.workload.job`) imports torch in its own
processes. `-P` and a private working directory keep whatever `workload/` package sits in the user's current
directory out of the ranks; PYTHONPATH is not inherited unless the caller passes it in `env`.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections import deque
from collections.abc import Iterator
from typing import Any

MAX_LINE = 64 * 1024  # a longer telemetry line is garbage, not a record


def torch_missing() -> str | None:
    """Why the job cannot start here, or None. Looks torch up without importing it."""
    import importlib.util

    if importlib.util.find_spec("torch") is None:
        return "the workload needs PyTorch, which is not installed (pip install 'hwtop[torch]' or your own torch)"
    return None


JOB_MODULE = "hwtop.workload.job"
INHERITED_NOT = ("PYTHONPATH", "PYTHONSTARTUP", "PYTHONHOME", "PYTHONSAFEPATH")


def job_environment(extra: dict[str, str] | None = None) -> dict[str, str]:
    """The monitor's environment less what would change which code the ranks import, plus `extra` (which may
    name PYTHONPATH on purpose)."""
    env = {key: value for key, value in os.environ.items() if key not in INHERITED_NOT}
    env.update(extra or {})
    env["PYTHONUNBUFFERED"] = "1"
    return env


class WorkloadProcess:
    def __init__(self, job_args: list[str], python: str = sys.executable, env: dict[str, str] | None = None) -> None:
        self.argv = [python, "-P", "-m", JOB_MODULE, *job_args]  # an argument list: no shell anywhere
        self.run_dir = tempfile.mkdtemp(prefix="hwtop-job-")  # 0700, ours alone: the ranks' cwd
        self.process = subprocess.Popen(self.argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                        stdin=subprocess.DEVNULL, start_new_session=True, cwd=self.run_dir,
                                        env=job_environment(env))
        self.pgid = self.process.pid  # start_new_session: the job leads its own group
        self.garbage_lines = 0
        self.stderr_tail: deque[str] = deque(maxlen=20)

    def records(self) -> Iterator[dict[str, Any]]:
        """Telemetry records as they arrive; lines that are too long or not JSON objects are counted, skipped."""
        assert self.process.stdout is not None
        while True:
            line = self.process.stdout.readline(MAX_LINE + 1)
            if not line:
                break
            if len(line) > MAX_LINE:
                self.garbage_lines += 1
                while line and not line.endswith(b"\n"):  # drop the rest of the oversized line
                    line = self.process.stdout.readline(MAX_LINE)
                continue
            try:
                record = json.loads(line)
            except ValueError:
                self.garbage_lines += 1
                continue
            if isinstance(record, dict):
                yield record
            else:
                self.garbage_lines += 1
        self._collect_stderr()

    def _collect_stderr(self) -> None:
        if self.process.stderr is not None:
            for line in self.process.stderr.read().decode("utf-8", "replace").splitlines():
                self.stderr_tail.append(line)

    def wait(self, timeout: float | None = None) -> int:
        return self.process.wait(timeout)

    def terminate(self) -> None:
        """SIGTERM to the whole group, without waiting: safe from a signal handler."""
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.pgid, signal.SIGTERM)

    def stop(self, grace_s: float = 5.0) -> int | None:
        """SIGTERM to the whole group, then SIGKILL after the grace period; returns the exit code."""
        for sig in (signal.SIGTERM, signal.SIGKILL):
            try:
                os.killpg(self.pgid, sig)
            except ProcessLookupError:
                break
            deadline = time.monotonic() + grace_s
            while time.monotonic() < deadline and group_alive(self.pgid):
                time.sleep(0.05)
            if not group_alive(self.pgid):
                break
        try:
            return self.process.wait(timeout=grace_s)
        except subprocess.TimeoutExpired:
            return None


def group_alive(pgid: int) -> bool:
    """Whether any process of the group still exists (zombies of ours not counted once reaped)."""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # killpg(0) also succeeds for zombies: look for a live member.
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as handle:
                fields = handle.read().rsplit(b")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[2]) == pgid and fields[0] != b"Z":
            return True
    return False


def describe(record: dict[str, Any]) -> str:
    """One human line for a telemetry record (hwtop workload without --json)."""
    event = record.get("event")
    rank = record.get("rank")
    if event == "step":
        wait = record.get("data_wait_fraction")
        ms = record["step_time_s"] * 1000
        return (f"rank {rank} step {record['step']:>4}  loss {record['loss']:.4f}  {ms:7.1f} ms"
                f"  {record.get('samples_per_s') or 0:8.1f} samples/s  data wait "
                f"{'N/A' if wait is None else f'{100 * wait:.0f}%'}")
    if event == "summary":
        saving, speedup = record.get("memory_saving_fraction"), record.get("speedup")
        return (f"rank {rank} amp-compare: memory saving "
                f"{'N/A' if saving is None else f'{100 * saving:.1f}%'} ({record.get('memory_metric')}), speedup "
                f"{'N/A' if speedup is None else f'{speedup:.2f}x'}")
    return f"rank {rank} {event}: " + ", ".join(f"{k}={v}" for k, v in record.items() if k not in ("event", "rank"))
