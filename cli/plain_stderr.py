"""hwtop's stderr lines quote what others wrote: a path, a recording's line, a job's last error, an exporter's
answer. While a command runs, stderr passes every write through model.safe_text.printable (newlines kept), so no
log line, from any command or library, can carry a control sequence to the terminal."""

from __future__ import annotations

import io
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TextIO, cast

from hwtop.model.safe_text import printable


class PrintableStream(io.TextIOBase):
    """A text stream that writes to `stream` with every control character but newline and tab shown."""

    def __init__(self, stream: TextIO) -> None:
        super().__init__()
        self.stream = stream

    def write(self, text: str) -> int:
        self.stream.write("\n".join(printable(line) for line in text.split("\n")))
        return len(text)

    def flush(self) -> None:
        self.stream.flush()

    def fileno(self) -> int:
        return self.stream.fileno()

    def isatty(self) -> bool:
        return self.stream.isatty()

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return self.stream.encoding


@contextmanager
def printable_stderr() -> Iterator[None]:
    original = sys.stderr
    sys.stderr = cast(TextIO, PrintableStream(original))
    try:
        yield
    finally:
        sys.stderr = original
