"""The `hwtop` script's first code: the smallest possible window in which ctrl-c could print a traceback.
Everything else (argument parsing, Textual, NVML) is imported inside the guard, so a ctrl-c at any moment of
start-up ends with status 130 and no traceback."""

from __future__ import annotations

import sys


def run() -> None:
    try:
        from hwtop.cli.main import main

        code = main()
    except KeyboardInterrupt:
        print(file=sys.stderr)
        code = 130
    raise SystemExit(code)
