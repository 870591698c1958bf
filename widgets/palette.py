"""Every colour the widgets and screens use, named by what it means: a widget asks for `CRIT` or `IOWAIT`, never
for "red", so a theme or a colour-blind palette changes here once. Values are Rich style strings; a check in the
tests keeps colour names out of every other module of tui/ and widgets/."""

from __future__ import annotations

# How a reading stands
OK = "green"
OK_STRONG = "bold green"
WARN = "yellow"
WARN_STRONG = "bold yellow"
WARN_ON_PANEL = "bold yellow on grey15"  # a throttle reason, set off from the line it ends
CRIT = "red"
CRIT_STRONG = "bold red"
INFO = "cyan"
INFO_STRONG = "bold cyan"
DIM = "dim"

# Badges: a severity or a state in reverse, readable at a glance
BADGE_CRIT = "bold white on red"
BADGE_WARN = "bold black on yellow"
BADGE_INFO = "bold black on cyan"

# Bars and trends
EMPTY = "grey30"  # the unused part of a bar
TREND = "cyan"  # sparklines

# Where CPU time goes, as btop and htop colour it
USER = "green"
SYSTEM = "red"
IOWAIT = "blue"
IRQ = "magenta"
STEAL = "yellow"

# Placement: NUMA nodes, groups of cores or processes, the focused job's own
GROUP = "bold magenta"  # a NUMA node's heading, the job's launcher, a pid of the embedded job
TAG = "magenta"  # a secondary fact on a line: a GPU's NUMA node, its MIG slices
WORKER = "cyan"  # a DataLoader worker, a worker of a rank

# Links between GPUs and NICs, nearest first (nvidia-smi topo -m's classes)
LINK_NVLINK = "bold green"
LINK_SWITCH = "cyan"  # PIX, PXB: through PCIe switches only
LINK_HOST = "yellow"  # PHB: through the CPU's host bridge
LINK_NODE = "dark_orange"  # NODE: across host bridges within a NUMA node
LINK_FAR = "bold red"  # SYS: across NUMA nodes

# Textual CSS (no Rich style there): the table header on a terminal limited to its 16 ANSI colours
ANSI_HEADER_BACKGROUND = "ansi_bright_blue"
ANSI_DEFAULT = "ansi_default"
