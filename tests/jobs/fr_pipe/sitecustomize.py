"""A stand-in for what a CUDA build of PyTorch does for an NCCL job and torch 2.13's gloo does not: a dump pipe.
ProcessGroupNCCL's DumpPipe (torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp) makes a FIFO named
`$TORCH_NCCL_DEBUG_INFO_PIPE_FILE<rank>.pipe` (unlink, mkfifo 0666, open O_RDONLY|O_NONBLOCK) when the recorder is
on (TORCH_FR_BUFFER_SIZE / TORCH_NCCL_TRACE_BUFFER_SIZE > 0), and its heartbeat monitor reads up to 128 bytes from
it about once a second; anything read makes the rank write its Flight Recorder dump, as on a watchdog timeout,
through DebugInfoWriter: to `$TORCH_FR_DUMP_TEMP_FILE<rank>` (or TORCH_NCCL_DEBUG_INFO_TEMP_FILE), truncated and
written in place. The dump here is torch's own (`_dump_fr_trace()`, the same pickle). Loaded into each rank through
PYTHONPATH, so the job's script is the user's, untouched."""

import os
import sys
import threading
import time


def _prefix() -> str:
    for name in ("TORCH_FR_DUMP_TEMP_FILE", "TORCH_NCCL_DEBUG_INFO_TEMP_FILE"):
        if os.environ.get(name):
            return os.environ[name]
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.environ.get("HOME", "/tmp"), ".cache")
    return os.path.join(cache, "torch", "comm_lib_trace_rank_")


def _monitor(stem: str) -> None:
    while not getattr(sys.modules.get("torch.distributed"), "is_initialized", lambda: False)():
        time.sleep(0.2)  # until the script's init_process_group (the module may still be importing)
    import torch._C._distributed_c10d as c10d

    rank = sys.modules["torch.distributed"].get_rank()
    name = f"{stem}{rank}.pipe"
    try:
        os.unlink(name)
    except FileNotFoundError:
        pass
    os.mkfifo(name, 0o666)
    fd = os.open(name, os.O_RDONLY | os.O_NONBLOCK)
    while True:
        time.sleep(1.0)
        try:
            asked = os.read(fd, 128)
        except BlockingIOError:
            continue
        if asked:
            with open(f"{_prefix()}{rank}", "wb") as dump:
                dump.write(c10d._dump_fr_trace())


def _enabled() -> bool:
    size = os.environ.get("TORCH_FR_BUFFER_SIZE") or os.environ.get("TORCH_NCCL_TRACE_BUFFER_SIZE") or "0"
    return size.strip().isdigit() and int(size) > 0


STEM = os.environ.get("TORCH_NCCL_DEBUG_INFO_PIPE_FILE")
if STEM and _enabled() and os.environ.get("RANK") is not None:
    threading.Thread(target=_monitor, args=(STEM,), name="fr-dump-pipe", daemon=True).start()
