"""`hwtop doctor --pid/--job` on bad input: exit 2 and one line for a pid that does not exist, is not Python,
may not be inspected, or is hwtop's own; and the job part of doctor's report."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

from hwtop.cli.doctor.facts import BoxFacts, JobFacts, StackFacts
from hwtop.cli.doctor.findings import Reported
from hwtop.cli.doctor.render import report, text
from hwtop.model.finding import Finding

HWTOP = [sys.executable, "-m", "hwtop"]


def doctor(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*HWTOP, "doctor", *args], capture_output=True, text=True, timeout=60)


@pytest.fixture(scope="module")
def sleeper():
    process = subprocess.Popen(["sleep", "60"])
    yield process.pid
    process.kill()
    process.wait()


@pytest.mark.parametrize(("args", "message"), [
    (("--pid", "99999999"), "hwtop: error: no process with pid 99999999"),
    (("--job", "no-such-job-anywhere-[0-9]{40}"), "hwtop: error: no process matches --job"),
    (("--pid", "0"), "hwtop: error: argument --pid: a pid is a positive number, got '0'"),
    (("--pid", str(os.getpid())), f"hwtop: error: pid {os.getpid()} is hwtop itself or one of its parents"),
    (("--pid", "1", "--workload", "balanced"), "hwtop: error: --workload and --pid cannot be used together"),
], ids=["no-such-pid", "no-such-job", "pid-0", "own-pid", "pid-and-workload"])  # ids stable from run to run
@pytest.mark.slow  # over the fast suite's minute on two cores (--durations)
def test_bad_targets_exit_2_with_one_line(args, message):
    result = doctor(*args)
    assert result.returncode == 2 and result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(message), result.stderr


def test_a_process_that_is_not_python_exits_2(sleeper):
    result = doctor("--job", str(sleeper))  # --job NAME_OR_PID: a number is a pid
    assert result.returncode == 2
    assert result.stderr.strip() == (f"hwtop: error: pid {sleeper} (sleep) is not a Python process and starts none: "
                                     "nothing to diagnose")


@pytest.mark.slow  # over the fast suite's minute on two cores (--durations)
def test_a_pattern_never_matches_hwtop_or_the_shell_that_started_it(tmp_path):
    """The pattern is in hwtop's own command line and in its shell's: only the job is found."""
    marker = f"train-{os.getpid()}-marker"
    target = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", marker])
    try:
        command = " ".join([*HWTOP, "doctor", "--job", marker, "--seconds", "0.5", "--json"])
        result = subprocess.run(["bash", "-c", f"{command}; true"], capture_output=True, text=True, timeout=60)
        report = json.loads(result.stdout)
        assert report["job"]["roots"] == [target.pid], report["job"]
    finally:
        target.kill()
        target.wait()


@pytest.mark.skipif(os.geteuid() != 0, reason="dropping to another user needs root")
def test_another_user_s_job_exits_2_saying_who_may_inspect_it(sleeper):
    """doctor run as `nobody` against a root process: /proc/PID/io is not readable (ptrace rules)."""
    code = textwrap.dedent(f"""
        import os, sys
        import hwtop.cli.main, hwtop.cli.doctor, hwtop.probes.job, hwtop.session.config
        hwtop.cli.main.build_parser()  # whatever argparse loads lazily, while the interpreter's files are readable
        os.environ["HOME"] = "/nonexistent"
        os.setgroups([]); os.setgid(65534); os.setuid(65534)
        sys.exit(hwtop.cli.main.main(["doctor", "--pid", "{sleeper}"]))
    """)
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert result.returncode == 2, result.stderr
    assert result.stderr.strip() == (f"hwtop: error: no permission to inspect pid {sleeper} (its /proc files belong "
                                     "to uid 0): run hwtop as the job's user or as root")


def test_the_report_says_where_each_rank_s_time_went():
    job = JobFacts("pid 500", (500,), "running", 20.0, processes=5, ranks=2, workers_exited_last_minute=12, stacks=(
        StackFacts(510, 0, 190, 30.0, {"waiting for data": 0.72, "compute": 0.2, "worker start/join": 0.08}),
        StackFacts(511, 1, 0, 0.0, {}, message="ptrace not permitted")))
    finding = Finding("worker-churn", "warning", "DataLoader workers re-created", ("e",), ("f",), scope="pid 510")
    out = text(report(20.0, BoxFacts(20, None, "box", 0, None, {}, (), job), [Reported(finding, 1.0, 9.0)]))
    lines = out.splitlines()
    assert lines[1] == ("  watching pid 500: running, 5 process(es), 2 rank(s), watched 20 s; 12 DataLoader workers "
                        "exited in the last minute")
    assert lines[2] == ("  where rank 0 (pid 510) spends its time (190 samples over 30 s): waiting for data 72%, "
                        "compute 20%, worker start/join 8%")
    assert lines[3] == "  where rank 1 (pid 511) spends its time: ptrace not permitted"
    assert "[WARNING] DataLoader workers re-created · pid 510  (worker-churn, active)" in out
