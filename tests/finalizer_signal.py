"""A signal that reaches a Python handler while a finalizer runs."""

from __future__ import annotations

import os


class SignalsInItsFinalizer:
    """An object whose finalizer sends this process a signal, so the handler runs inside the finalizer: where
    a KeyboardInterrupt raised by the handler is printed and swallowed, as CI saw a SIGTERM'd recorder do."""

    def __init__(self, sig: int) -> None:
        self.sig = sig

    def __del__(self) -> None:
        os.kill(os.getpid(), self.sig)
        for _ in range(100):  # bytecode for the pending handler to run on, still inside the finalizer
            pass
