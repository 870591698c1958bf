"""The base of every record in the model (snapshots, findings, frames, a job's and the workload's state).

Records are msgspec Structs rather than dataclasses: a frozen slotted dataclass compiles six methods from source
when its class is made (the snapshot's twenty records, on the first frame's path; benchmarks/README.md), while a
Struct class is made in C. Instances are also quicker to build and compare. Being trees of immutable
values that never form a cycle, they stay out of the garbage collector's walks (`gc=False`). Each subclass says
`frozen=True` again: type checkers do not inherit it.

The same holds for the probes', the advice's and the widgets' own classes on the monitor's start path (plain
`msgspec.Struct`s). Elsewhere (the demo machine, reports, the config file's schema, which session/schema reads as
dataclasses) dataclasses stay: they are made only when used."""

from __future__ import annotations

import msgspec


class Record(msgspec.Struct, frozen=True, gc=False):
    """Immutable, compared and hashed by value, never tracked by the garbage collector."""
