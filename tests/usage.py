"""Bad input on the command line: exit status 2 and one line on stderr that says what was wrong (the house rule)."""

from __future__ import annotations

import subprocess


def assert_one_line_error(result: subprocess.CompletedProcess[str], message: str) -> None:
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0], result.stderr
