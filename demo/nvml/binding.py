"""nvidia-ml-py, loaded for one fake library: a private copy of the installed `pynvml` module whose loader finds
that library where the real one would dlopen libnvidia-ml.so.1.

Everything above the C ABI is then nvidia-ml-py's own code (its ctypes structs, its size-then-fill calls, its
error classes, its function-pointer cache); only the shared object is ours. Two fakes never share a copy, so
they never share the module's global library handle.

Copies are pooled: ctypes caches the struct and array types a copy defines for the life of the process, so a
copy is never freed; once nothing but the pool holds one (no probe, no test), it is reset (no library loaded,
an empty function-pointer cache) and bound to the next fake instead of executing the module again.
"""

from __future__ import annotations

import importlib.util
import itertools
import sys
import threading
import types
from collections.abc import Callable
from functools import cache

_serial = itertools.count()
_pool: list[types.ModuleType] = []
_pool_lock = threading.Lock()
_IDLE_REFERENCES = 3  # the pool's list, the loop variable, getrefcount's own argument


@cache
def _pynvml_code() -> tuple[str, types.CodeType]:
    spec = importlib.util.find_spec("pynvml")
    if spec is None or spec.loader is None or spec.origin is None:
        raise ImportError("nvidia-ml-py is not installed")
    code = spec.loader.get_code("pynvml")  # type: ignore[attr-defined]
    if code is None:
        raise ImportError("nvidia-ml-py has no loadable pynvml module")
    return spec.origin, code


def _fresh() -> types.ModuleType:
    origin, code = _pynvml_code()
    name = f"_hwtop_pynvml_{next(_serial)}"
    module = types.ModuleType(name)
    module.__file__ = origin
    sys.modules[name] = module  # pynvml builds its error classes through sys.modules[__name__]
    try:
        exec(code, module.__dict__)  # the installed nvidia-ml-py's own code
    finally:
        del sys.modules[name]
    return module


def load_pynvml(loader: Callable[[str], object], owner: object) -> types.ModuleType:
    """A pynvml whose `CDLL(name)` is `loader(name)` (raise OSError for "library not found"), as freshly
    imported: no library loaded yet. `owner` is kept on it as `_hwtop_owner`."""
    with _pool_lock:
        module = None
        for candidate in _pool:
            if sys.getrefcount(candidate) <= _IDLE_REFERENCES:
                module = candidate
                break
        if module is None:
            module = _fresh()
            _pool.append(module)
        module._nvmlGetFunctionPointer_cache.clear()
        # `CDLL` is the name `from ctypes import *` bound, which _LoadNvmlLibrary calls.
        vars(module).update(nvmlLib=None, _nvmlLib_refcount=0, CDLL=loader, _hwtop_owner=owner)
        return module


def pool_size() -> int:
    return len(_pool)
