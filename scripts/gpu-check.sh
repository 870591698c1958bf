#!/usr/bin/env bash
# One prepared run on a lent GPU machine (the `device` tool), so its short lease is spent on one call:
#   1. scripts/capture-gpu.sh: nvidia-smi's views and a raw recording of hwtop's NVML calls, idle and under
#      load: the embedded job on CUDA beside host-to-device copies (scripts/h2d_load.py, tens of GB/s over
#      PCIe) (committed under tests/fixtures/gpu-capture/, checked by the tests);
#   2. hwtop's own answers on that machine: `snapshot --json`, `topo`, `doctor` over the embedded job on CUDA;
#   3. the monitor itself, headless, with the embedded job on CUDA, saved as an SVG screenshot.
# It only reads the cards: no setting is changed. Each step has its own timeout; a failing step is logged and
# the next one runs.
#
#   scripts/gpu-check.sh OUT_DIR
#
# hwtop must be installed for python3 (not only on PYTHONPATH: the embedded job's launcher keeps PYTHONPATH out of
# its ranks). On a machine without package registries, carry wheels: `pip wheel --no-deps -w .whl .` here, plus
# nvidia-ml-py and textual (within pyproject's ranges) and their requirements, then `python3 -m pip install --no-index --no-deps
# .whl/*.whl` there. GPU_CHECK_STEPS picks steps (default all); GPU_CHECK_DEVICE=cpu dry-runs it without a GPU.
set -u
out="${1:?usage: scripts/gpu-check.sh OUT_DIR}"
mkdir -p "$out"
export PYTHONUNBUFFERED=1 PYTHONFAULTHANDLER=1  # a crash prints every thread's Python stack
steps="${GPU_CHECK_STEPS:-capture snapshot topo doctor screenshot}"
wanted() { case " $steps " in *" $1 "*) return 0;; esac; return 1; }
here="$(cd "$(dirname "$0")/.." && pwd)"
device="${GPU_CHECK_DEVICE:-cuda}"  # cpu: a dry run of this script on a machine without a GPU
export GPU_CHECK_DEVICE="$device"
step() {  # step NAME SECONDS CMD...: run CMD with a timeout, say how it ended
    local name="$1" limit="$2"; shift 2
    local start=$SECONDS
    echo "== $name: $*"
    timeout --kill-after=5 "$limit" "$@"
    echo "== $name: exit $? after $((SECONDS - start)) s"
}

if wanted capture; then
step capture 120 env CAPTURE_SECONDS=10 CAPTURE_LOAD_CMD="python3 $here/scripts/h2d_load.py 45 & python3 -m hwtop.workload.job --device $device --amp bf16 --seconds 45; wait" \
    "$here/scripts/capture-gpu.sh" "$out/gpu-capture"
tar -czf "$out/gpu-capture.tar.gz" -C "$out" gpu-capture && rm -rf "$out/gpu-capture"
fi

wanted snapshot && step snapshot 30 sh -c "python3 -m hwtop snapshot --json > '$out/snapshot.json'"
wanted topo && step topo 30 sh -c "python3 -m hwtop topo > '$out/topo.txt' 2>&1"
wanted doctor && step doctor 90 sh -c "python3 -m hwtop doctor --seconds 20 --workload balanced --device $device \
    --amp bf16 > '$out/doctor.txt' 2>&1"
wanted screenshot && step screenshot 120 python3 - "$out" <<'EOF'
"""The monitor on this machine, the embedded job on its GPU, as a user would see it at 160x45."""
import asyncio
import os
import sys

from hwtop.cli.main import make_sampler
from hwtop.tui.app import HwtopApp

JOB = ["--scenario", "balanced", "--device", os.environ["GPU_CHECK_DEVICE"], "--amp", "bf16", "--seconds", "90"]


async def main(folder: str) -> None:
    app = HwtopApp(make_sampler(None, no_gpu=False), interval=0.5, workload_args=JOB)
    async with app.run_test(size=(160, 45)) as pilot:
        for _ in range(300):
            await pilot.pause(0.2)
            state = app.snapshot.workload if app.snapshot else None
            if state and state.ranks and all((r.step or 0) >= 20 for r in state.ranks):
                break
        await pilot.pause(2.0)
        print(app.save_screenshot(filename="h200-real-160x45.svg", path=folder))


asyncio.run(main(sys.argv[1]))
EOF
ls -la "$out"
