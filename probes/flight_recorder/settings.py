"""Where a rank's Flight Recorder dumps go and how it is asked for one, from its environment as torch reads it
(torch/csrc/distributed/c10d/FlightRecorder.cpp, DebugInfoWriter::getWriter; ProcessGroupNCCL's DumpPipe):
`TORCH_FR_DUMP_TEMP_FILE`, else `TORCH_NCCL_DEBUG_INFO_TEMP_FILE`, else a default that moved with torch's versions
(`/tmp/nccl_trace_rank_` until 2.5; since, under the user's cache: `$XDG_CACHE_HOME` or `$HOME/.cache`, `torch/`,
`comm_lib_trace_rank_`), followed by the rank's global rank. `TORCH_FR_DUMP_DYNAMIC_FILE_NAME` makes each dump's
name the whole variable, read again at each dump, which this reader cannot follow."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from typing import NamedTuple

PREFIX_VARIABLES = ("TORCH_FR_DUMP_TEMP_FILE", "TORCH_NCCL_DEBUG_INFO_TEMP_FILE")
BUFFER_VARIABLES = ("TORCH_FR_BUFFER_SIZE", "TORCH_NCCL_TRACE_BUFFER_SIZE")
PIPE_VARIABLE = "TORCH_NCCL_DEBUG_INFO_PIPE_FILE"
DYNAMIC_VARIABLE = "TORCH_FR_DUMP_DYNAMIC_FILE_NAME"
LEGACY_PREFIX = "/tmp/nccl_trace_rank_"
MAX_PATH = 4096


class Settings(NamedTuple):
    buffer: int | None  # entries, as set; None: not set
    prefixes: tuple[str, ...]  # where its dumps may be, the one it sets first
    pipe: str | None
    dynamic: bool


def settings_of(environ: Mapping[str, str]) -> Settings:
    """A rank's recorder settings from its environment (text from the job: lengths bounded, nothing run)."""
    buffer = None
    for name in BUFFER_VARIABLES:  # getCvarInt: the first variable set wins
        value = environ.get(name)
        if value is not None:
            text = value.strip()
            buffer = int(text) if re.fullmatch(r"-?\d{1,9}", text) else 0
            break
    set_prefix = next((environ[name] for name in PREFIX_VARIABLES if environ.get(name)), None)
    prefixes = (set_prefix,) if set_prefix else default_prefixes(environ)
    pipe = environ.get(PIPE_VARIABLE) or None
    dynamic = (environ.get(DYNAMIC_VARIABLE) or "").strip().lower() in ("1", "true", "yes", "y")
    return Settings(buffer, tuple(p for p in prefixes if len(p) < MAX_PATH),
                    pipe if pipe is not None and len(pipe) < MAX_PATH else None, dynamic)


def default_prefixes(environ: Mapping[str, str]) -> tuple[str, ...]:
    """Every default location of the torch versions in use, newest first."""
    cache = environ.get("XDG_CACHE_HOME") or os.path.join(environ.get("HOME") or "/tmp", ".cache")
    return (os.path.join(cache, "torch", "comm_lib_trace_rank_"), os.path.join(cache, "torch", "nccl_trace_rank_"),
            os.path.join(cache, "fr_trace", "nccl_trace_rank_"), LEGACY_PREFIX)
