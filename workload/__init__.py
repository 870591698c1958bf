"""The embedded PyTorch DDP/AMP training workload. Only `workload.job` imports torch, and it runs in its own
process (`python -m workload.job`), never in the monitor's."""
