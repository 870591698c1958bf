"""One name per module, under pytest too: pytest (and PYTHONPATH) put the checkout on sys.path, where each room
(`model/`, `tui/`, …) is importable by its bare name beside `hwtop.<room>`, a second copy of every module whose
classes `isinstance` does not recognise. Ruff bans the bare names in source (pyproject's banned-api); this finder,
installed by conftest.py, refuses them at run time in the test process, which catches importlib with a string."""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[1]
ROOMS = frozenset(p.name for p in (ROOT / "hwtop").iterdir() if p.is_symlink())


class BareRoomRefused(importlib.abc.MetaPathFinder):
    """Refuses `import <room>` where the room found is this checkout's; any other top-level module passes."""

    def find_spec(self, fullname: str, path: Sequence[str] | None,
                  target: ModuleType | None = None) -> importlib.machinery.ModuleSpec | None:
        if path is not None or fullname not in ROOMS:
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname)
        locations = list(spec.submodule_search_locations or []) if spec else []
        if any(Path(location).resolve() == ROOT / fullname for location in locations):
            raise ImportError(f"import hwtop.{fullname}, not {fullname}: one name per module", name=fullname)
        return None


def install() -> None:
    if not any(isinstance(finder, BareRoomRefused) for finder in sys.meta_path):
        sys.meta_path.insert(0, BareRoomRefused())
