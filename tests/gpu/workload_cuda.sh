#!/usr/bin/env bash
# Run on a machine with a CUDA GPU (the `device` tool's H200), from the repository root:
#   bash tests/gpu/workload_cuda.sh OUT_DIR
# Runs amp-compare and a real oom-ramp on CUDA, records the NVML conformance capture, the report's --pcie/--compute
# and a doctor run on CUDA, and writes all telemetry
# under OUT_DIR (copy them into tests/fixtures/ afterwards). Reads only; changes no setting of the card.
set -euo pipefail
out=${1:-tests/fixtures}
mkdir -p "$out"
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
python3 tests/gpu/record_conformance.py "$out/nvml_conformance.json"
timeout 300 python3 -m workload.job --scenario amp-compare --device cuda --batch-size 64 --steps 30 \
  > "$out/workload_cuda_amp_compare.jsonl"
grep '"summary"' "$out/workload_cuda_amp_compare.jsonl" | head -1
timeout 300 python3 -m workload.job --scenario oom-ramp --device cuda --model convnet --batch-size 256 \
  --num-workers 4 > "$out/workload_cuda_oom_ramp.jsonl"
grep '"oom"' "$out/workload_cuda_oom_ramp.jsonl" | head -1
# The box report's CUDA measurements: matmul throughput per dtype and host<->device copies per GPU.
timeout 300 python3 -m tui.cli report --pcie --compute --json > "$out/report_cuda.json"
python3 -c "import json,sys; d=json.load(open(sys.argv[1]))['measurements']; print(d.get('compute'), d.get('pcie'))" \
  "$out/report_cuda.json"
# The advice rules on a real card: a dataloader-bound job on CUDA should raise gpu-starved.
timeout 300 python3 -m tui.cli doctor --seconds 15 --workload dataloader-bound --device cuda --json \
  > "$out/doctor_cuda_dataloader_bound.json" || true
