"""Sequential read throughput of the files under a path, with the page cache bypassed: each file is flushed
and dropped from the cache (posix_fadvise DONTNEED) before it is read, so the figure is the device's."""

from __future__ import annotations

import os
import time
from dataclasses import dataclass

from hwtop.advice.thresholds import TABLE
from hwtop.probes.disks import device_for_path, disk_kind

CHUNK = 4 << 20
DEFAULT_LIMIT = 1 << 30
# the hardware guide's table, as the io-bound rule compares with it: one source for both
CLASS_BYTES_PER_S = {kind: TABLE[f"{kind}_bytes_per_s"].value for kind in ("hdd", "ssd", "nvme")}


@dataclass(frozen=True, slots=True)
class StorageResult:
    path: str
    files: int
    bytes_read: int
    seconds: float
    device: str | None
    kind: str | None
    class_bytes_per_s: float | None

    @property
    def bytes_per_s(self) -> float:
        return self.bytes_read / self.seconds if self.seconds > 0 else 0.0


def _files(path: str) -> list[str]:
    if os.path.isfile(path):
        return [path]
    out = []
    for folder, _dirs, names in os.walk(path):
        for name in sorted(names):
            full = os.path.join(folder, name)
            if os.path.isfile(full) and not os.path.islink(full):
                out.append(full)
    return out


def _drop_cache(fd: int) -> None:
    try:
        os.fdatasync(fd)  # dirty pages cannot be dropped; a read-only file may refuse the sync
    except OSError:
        pass
    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)


def measure(path: str, limit_bytes: int = DEFAULT_LIMIT) -> StorageResult:
    """Reads up to `limit_bytes` from the files under `path`. Raises OSError (with the path) when nothing there
    can be read."""
    files = _files(path)
    if not files:
        raise OSError(f"no readable files under {path}")
    total, used, elapsed = 0, 0, 0.0
    buffer = bytearray(CHUNK)
    view = memoryview(buffer)
    for name in files:
        if total >= limit_bytes:
            break
        try:
            fd = os.open(name, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
        except OSError:
            continue
        try:
            _drop_cache(fd)
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_SEQUENTIAL)
            start = time.perf_counter()
            with os.fdopen(fd, "rb", buffering=0, closefd=False) as handle:
                while total < limit_bytes:
                    count = handle.readinto(view[: min(CHUNK, limit_bytes - total)])
                    if not count:
                        break
                    total += count
            elapsed += time.perf_counter() - start
            used += 1
            _drop_cache(fd)  # leave the cache as it was: the measurement must not warm the next one
        finally:
            os.close(fd)
    if not used:
        raise OSError(f"no readable files under {path}")
    device = device_for_path(path)
    kind = disk_kind(device) if device else None
    return StorageResult(path, used, total, elapsed, device, kind, CLASS_BYTES_PER_S.get(kind or ""))
