"""Every colour the widgets use, named by what it means: a widget asks for `CRIT` or `IOWAIT`, never for "red",
so a theme or a colour-blind palette changes here once. Values are Rich style strings."""

from __future__ import annotations

# Levels of a reading
OK = "green"
WARN = "yellow"
CRIT = "red"
DIM = "dim"
EMPTY = "grey30"  # the unused part of a bar

# Where CPU time goes, as btop and htop colour it
USER = "green"
SYSTEM = "red"
IOWAIT = "blue"
IRQ = "magenta"
STEAL = "yellow"
