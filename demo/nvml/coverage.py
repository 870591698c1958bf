"""Which nvidia-ml-py releases the fake library is tested under. The fake answers the C calls the bindings make;
a release outside these may call differently (a new struct version, a renamed entry point), so the demo says so
in one line rather than show GPUs that are wrong without a word. The monitor of a real GPU works with any release
in pyproject's range; .ci/run runs the NVML tests under the lowest and the highest of it."""

from __future__ import annotations

import importlib.util
import os
import re

COVERED = ("12.550.52", "13.615.71")  # lowest and highest nvidia-ml-py the demo's NVML tests pass under
_DIST_INFO = re.compile(r"nvidia_ml_py-([0-9][0-9.]*)\.dist-info")


def release(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in version.split(".") if part.isdigit())


def installed() -> str | None:
    """The installed nvidia-ml-py's version, from the dist-info beside its pynvml module (importlib.metadata
    would add its own imports to the demo's start); None when it cannot be told."""
    spec = importlib.util.find_spec("pynvml")
    if spec is None or spec.origin is None:
        return None
    try:
        names = os.listdir(os.path.dirname(spec.origin))
    except OSError:
        return None
    versions = [match.group(1) for name in names if (match := _DIST_INFO.fullmatch(name))]
    return versions[0] if len(versions) == 1 else None


def note(version: str | None) -> str | None:
    """One line when `version` is outside what the fake covers, else None."""
    if version is None or release(COVERED[0]) <= release(version) <= release(COVERED[1]):
        return None
    return (f"the demo's NVML fake covers nvidia-ml-py {COVERED[0]} to {COVERED[1]}; {version} is installed, so "
            "its GPUs may read differently from a real card's")
