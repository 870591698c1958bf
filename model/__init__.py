"""The typed records every room shares: a tick's Snapshot, its Findings, the Frame that carries both (and the
sparklines' history), a focused job's and the embedded workload's state. Frozen msgspec Structs (model/record.py)."""
