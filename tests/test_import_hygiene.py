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
