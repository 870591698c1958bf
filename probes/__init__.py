"""Headless readers of the machine and the typed snapshot model (no Textual, no torch).

    from probes.sampler import Sampler
    snapshot = Sampler().sample()
"""

from probes.model import SCHEMA, Snapshot

__all__ = ["SCHEMA", "Snapshot"]
