"""Headless readers of the machine and the typed snapshot model (no Textual, no torch).

    from hwtop.session.sampler import Sampler
    snapshot = Sampler().sample()
"""

from hwtop.model.snapshot import SCHEMA, Snapshot

__all__ = ["SCHEMA", "Snapshot"]
