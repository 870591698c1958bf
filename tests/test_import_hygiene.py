from __future__ import annotations

import subprocess
import sys


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


def test_monitor_never_imports_torch() -> None:
    assert "torch" not in imported_after("import hwtop.tui.app, hwtop.cli.main, hwtop.workload.launcher")


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
