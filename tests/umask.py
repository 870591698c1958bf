"""A file's mode checked under a umask the test chooses: the product's own mode must hold whatever the user's is."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def umask(value: int) -> Iterator[None]:
    """The process's umask is `value` inside the block, the one before after it."""
    old = os.umask(value)
    try:
        yield
    finally:
        os.umask(old)
