"""`python -m hwtop` runs the command line, as the `hwtop` script does."""

from hwtop.cli.entry import run

run()
