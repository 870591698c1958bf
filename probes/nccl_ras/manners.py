"""How often hwtop may ask NCCL's RAS service (NCCL issue #1718: a tight polling loop hurt the job). Its own module,
so the command line names the figures without loading the client on the monitor's start."""

DEFAULT_INTERVAL_S = 10.0
MIN_INTERVAL_S = 5.0
