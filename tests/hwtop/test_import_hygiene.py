from __future__ import annotations

import os
import subprocess
import sys

import pytest


def imported_after(code: str) -> str:
    """Runs `code` in a fresh interpreter and prints which of Textual, Rich and torch it loaded."""
    code += "\nprint(','.join(m for m in ('textual', 'rich', 'torch') if m in sys.modules))\n"
    return subprocess.run([sys.executable, "-c", "import sys\n" + code], capture_output=True, text=True,
                          check=True).stdout.strip()


def test_probes_import_no_ui_and_no_torch() -> None:
    code = (
        "import hwtop.probes, hwtop.probes.gpu, hwtop.session.sampler, hwtop.demo.nvml, hwtop.demo.profiles\n"
        "hwtop.session.sampler.Sampler().sample()\n"
    )
    assert imported_after(code) == ""


ON_USE_ONLY = ("torch", "prometheus_client", "hypothesis", "hwtop.exporter", "hwtop.report",
               # a key opens these, or the fleet view's tables use it: not on the first frame's path
               "hwtop.tui.help", "hwtop.tui.topology_screen", "hwtop.tui.advice_screen", "hwtop.tui.workload_dialog",
               "textual.widgets._data_table",
               # the config file's schema and TOML: only when a config file exists
               "hwtop.session.config_file", "hwtop.session.schema", "tomllib",
               # widened PCIe counters: on a GPU's first 32-bit PCIe reading (R555+; the rtx3090 demo is R550)
               "hwtop.probes.nvml.pcie_wide",
               # the options of subcommands the command line does not name
               "hwtop.cli.export", "hwtop.cli.report", "hwtop.cli.snapshot", "hwtop.cli.topo", "hwtop.cli.doctor",
               "hwtop.cli.record", "hwtop.cli.replay", "hwtop.cli.fleet", "hwtop.cli.workload")


@pytest.mark.slow  # over the fast suite's minute on two cores (--durations)
def test_monitor_start_path_loads_what_it_draws_only(tmp_path) -> None:  # noqa: ANN001 - pytest's tmp_path
    """The monitor's start (argument parsing, config, the app, a demo sampler's first tick) never loads what
    only other commands or keys use: torch, prometheus_client, hypothesis, the exporter, the box report, the
    screens a key opens, DataTable, and (no config file) the file's schema."""
    code = (
        "from hwtop.cli.main import build_parser, make_sampler\n"
        "build_parser(['--demo', 'rtx3090']).parse_known_args(['--demo', 'rtx3090'])\n"
        "from hwtop.session.config import load\n"
        "assert load(None).path is None\n"
        "import hwtop.tui.app, hwtop.workload.launcher\n"
        "make_sampler('rtx3090', False).sample()\n"
        f"print(','.join(sorted(m for m in sys.modules if m.startswith({ON_USE_ONLY!r}))))\n"
    )
    out = subprocess.run([sys.executable, "-c", "import sys\n" + code], capture_output=True, text=True, check=True,
                         env={**os.environ, "XDG_CONFIG_HOME": str(tmp_path)}).stdout.strip()
    assert out == ""


@pytest.mark.slow  # over the fast suite's minute on two cores (--durations)
def test_a_live_monitor_without_a_job_or_workload_loads_neither_model() -> None:
    """This machine's sampler, two ticks of advice and the app: a focused job's model and the embedded workload's
    (a dozen records and their modules) load only with a job or a workload."""
    code = (
        "import hwtop.tui.app\n"
        "from hwtop.session.sampler import Sampler\n"
        "from hwtop.session.session import Session\n"
        "session = Session(Sampler()); session.tick(); session.tick()\n"
        "print(','.join(sorted(m for m in sys.modules if m.startswith(('hwtop.model', 'hwtop.probes.job')))))\n"
    )
    out = subprocess.run([sys.executable, "-c", "import sys\n" + code], capture_output=True, text=True,
                         check=True).stdout.strip()
    assert out.split(",") == ["hwtop.model", "hwtop.model.finding", "hwtop.model.frame", "hwtop.model.history",
                              "hwtop.model.owner", "hwtop.model.panels", "hwtop.model.record",
                              "hwtop.model.safe_text", "hwtop.model.snapshot"]  # owner: a process's Slurm job or pod,
    # on every snapshot; panels: the panel names the main screen's list is held to


def test_the_start_path_guard_sees_a_forbidden_import() -> None:
    """The check above is not blind: a module it forbids is seen once imported."""
    code = f"import hwtop.report\nprint(','.join(m for m in sys.modules if m.startswith({ON_USE_ONLY!r})))\n"
    out = subprocess.run([sys.executable, "-c", "import sys\n" + code], capture_output=True, text=True,
                         check=True).stdout.strip()
    assert "hwtop.report" in out.split(",")


@pytest.mark.slow  # over the fast suite's minute on two cores (--durations)
def test_advice_and_report_are_headless() -> None:
    """The rules and the box report run without Textual, Rich or torch (doctor, report, scripts)."""
    code = (
        "import hwtop.advice.engine, hwtop.report.facts, hwtop.report.checks, hwtop.report.fit\n"
        "import hwtop.report.render, hwtop.report.storage\n"
        "from hwtop.report.facts import gather\n"
        "from hwtop.report.checks import checks, tier\n"
        "facts = gather('dgx-a100'); tier(facts); checks(facts)\n"
        "from hwtop.advice.engine import AdviceEngine\n"
        "from hwtop.session.sampler import Sampler\n"
        "AdviceEngine().update(Sampler().sample())\n"
    )
    assert imported_after(code) == ""
