"""`python -m hwtop.cli.capture`: a raw recording of every NVML call hwtop makes, for scripts/capture-gpu.sh.

It runs hwtop's NVML probe for a while (one read per --interval) with the bindings wrapped by
probes/nvml/record.py, and writes, under --out:
  nvml-calls-PHASE.jsonl   a header line, then one line per call: arguments, result or error, latency (µs)
  gpus-PHASE.jsonl         what the probe reported at each read (GpuSystem and GpuSnapshots, as JSON)
On a machine without a GPU it still writes both: the calls show how NVML failed (no library, no driver), and
the header says so. `--demo SPEC` records against the fake library instead (for tests and for trying it out).
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from pathlib import Path
from typing import Any, TextIO

import msgspec

from hwtop import __version__


def _json_line(handle: TextIO, record: dict[str, Any]) -> None:
    handle.write(json.dumps(record, default=str, separators=(",", ":")) + "\n")
    handle.flush()


def bindings_version() -> str | None:
    try:
        from importlib.metadata import version

        return version("nvidia-ml-py")
    except Exception:  # noqa: BLE001 - not installed
        return None


def capture(out: Path, phase: str, seconds: float, interval: float, demo: str | None = None,
            reads: int | None = None) -> dict[str, Any]:
    """Record `phase` for `seconds` (or `reads` probe reads, if that comes first); returns a summary (reads,
    calls, errors by call, GPUs seen)."""
    from hwtop.probes.gpu import NvmlProbe
    from hwtop.probes.nvml.record import RecordingNvml

    out.mkdir(parents=True, exist_ok=True)
    if demo is not None:
        from hwtop.demo.nvml import demo_library

        library = demo_library(demo)
        nvml: Any = library.pynvml
    else:
        try:
            import pynvml as nvml
        except ImportError:
            nvml = None
    calls_path, gpus_path = out / f"nvml-calls-{phase}.jsonl", out / f"gpus-{phase}.jsonl"
    summary: dict[str, Any] = {"phase": phase, "reads": 0, "calls": 0, "errors": {}, "gpus": 0, "message": None}
    with calls_path.open("w") as calls, gpus_path.open("w") as gpus:
        header = {"format": "hwtop.nvml-calls/1", "phase": phase, "host": platform.node(), "started": time.time(),
                  "hwtop_version": __version__, "nvidia_ml_py": bindings_version(), "demo": demo,
                  "python": sys.version.split()[0]}
        _json_line(calls, header)

        def sink(record: dict[str, Any]) -> None:
            summary["calls"] += 1
            if "error" in record:
                key = f"{record['call']}: {record['error']['type']}"
                summary["errors"][key] = summary["errors"].get(key, 0) + 1
            _json_line(calls, record)

        if nvml is None:
            summary["message"] = "nvidia-ml-py is not installed: no NVML calls to record"
            _json_line(calls, {"note": summary["message"]})
            return summary
        probe = NvmlProbe(RecordingNvml(nvml, sink))
        end = time.monotonic() + seconds
        try:
            while True:
                started = time.monotonic()
                system, snapshots = probe.read()
                summary["reads"] += 1
                summary["gpus"] = len(snapshots)
                summary["message"] = system.message
                _json_line(gpus, {"t": time.time(), "system": msgspec.to_builtins(system),
                                  "gpus": [msgspec.to_builtins(g) for g in snapshots]})
                if time.monotonic() >= end or (reads is not None and summary["reads"] >= reads):
                    break
                time.sleep(max(0.0, interval - (time.monotonic() - started)))
        finally:
            probe.close()
    return summary


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m hwtop.cli.capture",
                                     description="A raw recording of every NVML call hwtop makes.")
    parser.add_argument("--out", required=True, type=Path, help="directory to write into")
    parser.add_argument("--phase", default="idle", help="name of this recording (idle, load, ...)")
    parser.add_argument("--seconds", type=float, default=10.0, help="how long to record (default 10)")
    parser.add_argument("--interval", type=float, default=1.0, help="seconds between probe reads (default 1)")
    parser.add_argument("--reads", type=int, help="stop after this many probe reads (default: --seconds decides)")
    parser.add_argument("--demo", metavar="SPEC", help="record against the fake NVML library (PROFILE[:VARIANT])")
    args = parser.parse_args(argv)
    summary = capture(args.out, args.phase, args.seconds, args.interval, args.demo, args.reads)
    (args.out / f"summary-{args.phase}.json").write_text(json.dumps(summary, indent=2) + "\n")
    print(f"{args.phase}: {summary['reads']} reads, {summary['calls']} NVML calls, {summary['gpus']} GPU(s)"
          + (f"; {summary['message']}" if summary["message"] else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
