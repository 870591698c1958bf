"""`hwtop workload [job options] [--json]`: the embedded PyTorch job run headless, its telemetry printed. Its
options are the job's own (its parser lives beside torch, in the job's process)."""

from __future__ import annotations

import sys

from hwtop.cli.options import Invocation
from hwtop.model.safe_text import printable


def workload_help() -> int:
    """The job's own options, then hwtop's one option."""
    import subprocess

    from hwtop.workload.launcher import JOB_MODULE, job_environment

    shown = subprocess.run([sys.executable, "-P", "-m", JOB_MODULE, "--help"], env=job_environment(),
                           stdin=subprocess.DEVNULL, check=False)
    print("\nhwtop workload also takes --json: each telemetry record as one JSON line.")
    return shown.returncode


def workload_command(argv: list[str]) -> int:
    """Runs the job, prints its telemetry, stops it whole on SIGINT/SIGTERM/SIGHUP. The job's own parser checks
    its options (bad ones exit 2)."""
    from hwtop.cli.stop_signals import StopSignals
    from hwtop.workload.launcher import WorkloadProcess, describe, torch_missing

    missing = torch_missing()
    if missing:
        print(f"hwtop: error: {missing}", file=sys.stderr)
        return 2
    as_json = "--json" in argv
    job_args = [a for a in argv if a != "--json"]
    if "-h" in job_args or "--help" in job_args:
        return workload_help()
    job = WorkloadProcess(job_args)
    with StopSignals(on_stop=job.terminate) as stop:  # the job's output then ends, and so does the loop
        try:
            for record in job.records():
                print(_json(record) if as_json else printable(describe(record)), flush=True)
            code = job.wait()
        finally:
            job.stop(grace_s=2.0)
    if stop.asked:
        return 130
    if code != 0:
        tail = job.stderr_tail[-1] if job.stderr_tail else "no error output"
        # 2 is the job's argument parser refusing an option: its line already says which and why
        print(printable(tail if code == 2 else f"hwtop: workload exited with {code}: {tail}"), file=sys.stderr)
        return 2 if code == 2 else 1
    return 0


def run(call: Invocation) -> int:
    """`hwtop [options] workload ...` parsed whole (the plain `hwtop workload ...` skips the parser): what follows
    the command is the job's."""
    argv = list(call.argv)
    return workload_command(argv[argv.index("workload") + 1:])


def _json(record: object) -> str:
    import json  # not on the monitor's start path

    return json.dumps(record)
