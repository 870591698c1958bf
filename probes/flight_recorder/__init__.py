"""PyTorch's Flight Recorder dumps of a job's ranks, read safely: found at each rank's own prefix (its environment),
opened only when owned by the job's user, never through a link, bounded in size, and unpickled into plain
containers only. `FlightRecorderReader` (reader.py) owns what it has read; `request_dump` (pipe.py) asks a rank for a
dump through its dump pipe, only when the user asks, and `ask_dumps` (ask.py) asks every rank of a job (`F` in the
job view, `doctor --fr-dump`)."""
