#!/usr/bin/env bash
# Capture what a real GPU machine says, for hwtop's tests (issue 19): nvidia-smi's own views, the driver and
# CUDA versions, and a raw recording of every NVML call hwtop makes (arguments, results, errors, latency),
# idle and then under load. It only reads: no setting of any card is changed.
#
#   scripts/capture-gpu.sh [OUT_DIR]
#
# Environment: CAPTURE_SECONDS (each phase, default 10), CAPTURE_INTERVAL (default 1),
# CAPTURE_LOAD_CMD (a command that loads the GPUs during the "load" phase; default: hwtop's embedded
# workload on CUDA when torch can see a GPU, else the load phase is skipped), PYTHON (default python3).
# Without a GPU, nvidia-smi or nvidia-ml-py it still runs: MISSING.txt says what could not be captured.
set -u
out="${1:-gpu-capture-$(hostname)-$(date +%Y%m%d-%H%M%S)}"
seconds="${CAPTURE_SECONDS:-10}"
interval="${CAPTURE_INTERVAL:-1}"
python="${PYTHON:-python3}"
mkdir -p "$out"
missing="$out/MISSING.txt"
: > "$missing"

note() { echo "$*" >> "$missing"; echo "capture-gpu: $*" >&2; }

smi() {  # smi FILE ARGS...: nvidia-smi ARGS > FILE, or a note saying why not
    local file="$1"; shift
    if ! command -v nvidia-smi > /dev/null 2>&1; then
        note "nvidia-smi $*: nvidia-smi not found"
        return
    fi
    if ! nvidia-smi "$@" > "$out/$file" 2> "$out/$file.stderr"; then
        note "nvidia-smi $*: failed (exit $?): $(head -c 300 "$out/$file.stderr")"
    fi
    [ -s "$out/$file.stderr" ] || rm -f "$out/$file.stderr"
}

smi nvidia-smi-q.xml -q -x
smi topo-m.txt topo -m
smi nvlink-s.txt nvlink -s
smi query-gpu.csv --query-gpu=index,name,uuid,pci.bus_id,driver_version,memory.total,memory.used,utilization.gpu,temperature.gpu,power.draw,enforced.power.limit,clocks.sm,clocks.max.sm,clocks.mem,clocks.max.mem,pcie.link.gen.current,pcie.link.width.current,pcie.link.gen.max,pcie.link.width.max,compute_cap,pstate,ecc.mode.current,mig.mode.current --format=csv

{
    echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo "kernel: $(uname -r)"
    if [ -r /proc/driver/nvidia/version ]; then
        echo "driver (/proc/driver/nvidia/version):"; cat /proc/driver/nvidia/version
    fi
    if command -v nvidia-smi > /dev/null 2>&1; then
        nvidia-smi 2>/dev/null | grep -E "Driver Version|CUDA Version" || true
    fi
    "$python" -c "import importlib.metadata as m; print('nvidia-ml-py:', m.version('nvidia-ml-py'))" 2>/dev/null \
        || echo "nvidia-ml-py: not installed"
    "$python" -c "import torch; print('torch:', torch.__version__, 'cuda:', torch.version.cuda, \
        'devices:', torch.cuda.device_count())" 2>/dev/null || echo "torch: not importable"
} > "$out/versions.txt"
[ -r /proc/driver/nvidia/version ] || note "/proc/driver/nvidia/version: no NVIDIA kernel module loaded"

record() {  # record PHASE
    if ! "$python" -m hwtop.cli.capture --out "$out" --phase "$1" --seconds "$seconds" --interval "$interval"; then
        note "NVML recording ($1): hwtop's capture failed (is hwtop importable by $python?)"
    fi
}

record idle

load_cmd="${CAPTURE_LOAD_CMD:-}"
if [ -z "$load_cmd" ] && "$python" -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)" \
        > /dev/null 2>&1; then
    load_cmd="$python -m hwtop.workload.job --device cuda --seconds $((seconds + 30))"
fi
if [ -n "$load_cmd" ]; then
    # its own process group, so that the job and every process it starts end with the phase
    setsid sh -c "$load_cmd" > "$out/load.log" 2>&1 &
    load_pid=$!
    sleep 5  # let the job reach its steady state
    record load
    kill -TERM -- "-$load_pid" 2> /dev/null
    wait "$load_pid" 2> /dev/null
else
    note "load phase: no CAPTURE_LOAD_CMD and no CUDA device for the embedded workload: skipped"
fi

if [ -s "$missing" ]; then
    echo "capture-gpu: wrote $out (incomplete: see $missing)"
else
    rm -f "$missing"
    echo "capture-gpu: wrote $out"
fi
