from __future__ import annotations

import subprocess
import sys


def test_probes_import_no_ui_and_no_torch() -> None:
    code = (
        "import sys, probes, probes.sampler, probes.gpu, probes.fakenvml, probes.demo_profiles\n"
        "probes.sampler.Sampler().sample()\n"
        "bad = [m for m in ('textual', 'rich', 'torch') if m in sys.modules]\n"
        "print(','.join(bad))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == ""


def test_monitor_never_imports_torch() -> None:
    code = "import sys, tui.app, tui.cli, workload.launcher\nprint('torch' in sys.modules)\n"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "False"


def test_advice_and_report_are_headless() -> None:
    """The rules and the box report run without Textual, Rich or torch (doctor, report, scripts)."""
    code = (
        "import sys, advice.engine, report.facts, report.checks, report.fit, report.render, report.storage\n"
        "from report.facts import gather\n"
        "from report.checks import checks, tier\n"
        "facts = gather('dgx-a100'); tier(facts); checks(facts)\n"
        "from advice.engine import AdviceEngine\n"
        "from probes.sampler import Sampler\n"
        "AdviceEngine().update(Sampler().sample())\n"
        "print(','.join(m for m in ('textual', 'rich', 'torch') if m in sys.modules))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == ""
