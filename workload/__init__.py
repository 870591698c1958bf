"""The embedded PyTorch DDP/AMP training workload. Only `hwtop.workload.job` (and the report's bench) import torch,
each in its own process (`hwtop workload`, `python -m hwtop.workload.job`), never in the monitor's."""
