"""Which processes make a training job: the launcher (known by its executable or module, and by the rank
variables its children carry), the ranks, their DataLoader workers; and which processes never do (hwtop
itself, its ancestors up to its shell, and what it starts)."""

from __future__ import annotations

import os
import re

# Executables that start ranks: torchrun and its kin, MPI, Slurm, DeepSpeed and Accelerate.
LAUNCHER_EXECUTABLES = frozenset({"torchrun", "mpirun", "mpiexec", "orterun", "prterun", "orted", "prted", "srun",
                                  "deepspeed", "accelerate", "hydra_pmi_proxy", "pmi_proxy"})
# `python -m MODULE` launchers (a module starting with one of these).
LAUNCHER_MODULES = ("torch.distributed.run", "torch.distributed.launch", "torch.distributed.elastic",
                    "deepspeed.launcher", "accelerate.commands.launch")
# The rank, as each launcher tells it to its children.
RANK_KEYS = ("RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK")
# HOME and XDG_CACHE_HOME place torch's default Flight Recorder dumps (probes/flight_recorder/settings.py)
ENV_KEYS = (*RANK_KEYS, "LOCAL_RANK", "WORLD_SIZE", "CUDA_VISIBLE_DEVICES", "OMP_NUM_THREADS", "LOCAL_WORLD_SIZE",
            "HOME", "XDG_CACHE_HOME")
# NCCL's settings decide its transport: the network rules read them; TORCH_FR_* and TORCH_NCCL_* set the recorder
ENV_PREFIXES = ("NCCL_", "TORCH_FR_", "TORCH_NCCL_")
_PYTHON = re.compile(r"^(python|pypy)(\d+(\.\d+)*)?[a-z]?$")


def argv_of(cmdline: bytes) -> tuple[str, ...]:
    return tuple(part.decode("utf-8", "replace") for part in cmdline.split(b"\0") if part)


def is_python(argv: tuple[str, ...], exe: str | None = None, comm: str = "") -> bool:
    names = [os.path.basename(exe or ""), os.path.basename(argv[0]) if argv else "", comm]
    return any(_PYTHON.match(name) for name in names if name)


def python_module(argv: tuple[str, ...]) -> str | None:
    """MODULE of `python [options] -m MODULE ...`."""
    for index, arg in enumerate(argv[1:], start=1):
        if arg == "-m" and index + 1 < len(argv):
            return argv[index + 1]
        if arg.startswith("-m") and len(arg) > 2 and not arg.startswith("--"):
            return arg[2:]
        if not arg.startswith("-"):
            return None  # the script: what follows are its own arguments
    return None


def launcher_kind(argv: tuple[str, ...], comm: str = "") -> str | None:
    """'torchrun', 'python -m torch.distributed.run', 'mpirun', ...; None for anything else."""
    if not argv:
        return None
    exe = os.path.basename(argv[0])
    if exe in LAUNCHER_EXECUTABLES:
        if exe == "accelerate" and (len(argv) < 2 or argv[1] != "launch"):
            return None
        return exe
    if is_python(argv, comm=comm):
        module = python_module(argv)
        if module is not None:
            return f"python -m {module}" if module.startswith(LAUNCHER_MODULES) else None
        script = next((a for a in argv[1:] if not a.startswith("-")), None)  # a console script run by python
        if script is not None and os.path.basename(script) in LAUNCHER_EXECUTABLES:
            return os.path.basename(script)
    return None


def rank_of(environ: dict[str, str] | None) -> int | None:
    for key in RANK_KEYS:
        value = (environ or {}).get(key)
        if value is not None and value.strip().lstrip("-").isdigit():
            return int(value)
    return None


def parse_environ(data: bytes, keys: tuple[str, ...] = ENV_KEYS,
                  prefixes: tuple[str, ...] = ENV_PREFIXES) -> dict[str, str]:
    out = {}
    for item in data.split(b"\0"):
        name, sep, value = item.partition(b"=")
        if sep:
            key = name.decode("utf-8", "replace")
            if key in keys or key.startswith(prefixes):
                out[key] = value.decode("utf-8", "replace")
    return out


def own_lineage(proc: str = "/proc", pid: int | None = None) -> frozenset[int]:
    """This process and every ancestor (its shell, terminal, ssh session): never part of a job it watches."""
    out = set()
    current = os.getpid() if pid is None else pid
    while current > 1 and current not in out:
        out.add(current)
        try:
            with open(f"{proc}/{current}/stat", "rb") as handle:
                text = handle.read().decode("utf-8", "replace")
            current = int(text[text.rindex(")") + 2:].split()[1])
        except (OSError, ValueError, IndexError):
            break
    return frozenset(out)


def children_of(proc: str, pid: int, limit: int = 4096) -> list[int] | None:
    """The children of every thread of `pid` (/proc/PID/task/TID/children); None where the kernel lacks the
    file (CONFIG_PROC_CHILDREN) so the caller falls back to a scan of /proc."""
    out: list[int] = []
    try:
        tids = os.listdir(f"{proc}/{pid}/task")
    except OSError:
        return []
    for tid in tids[:limit]:
        try:
            with open(f"{proc}/{pid}/task/{tid}/children", "rb") as handle:
                out += [int(p) for p in handle.read().split()]
        except FileNotFoundError:
            if not os.path.exists(f"{proc}/{pid}/task/{tid}"):
                continue
            return None
        except (OSError, ValueError):
            continue
    return out


def parse_target(text: str) -> tuple[int | None, str | None]:
    """--job NAME_OR_PID: a number is a pid, anything else a pattern for the command line."""
    stripped = text.strip()
    return (int(stripped), None) if stripped.isdigit() else (None, text)
