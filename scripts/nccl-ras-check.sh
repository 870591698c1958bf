#!/usr/bin/env bash
# For a lent GPU machine (the `device` tool): NCCL's real RAS answers, saved as fixtures for the parsers' tests.
#   1. a one-rank torch CUDA all-reduce loop (scripts/nccl_allreduce.py) with NCCL_RAS_ADDR on a free port;
#   2. `hwtop doctor --pid` on it: which port hwtop found and what it made of the answers (doctor.json, .txt);
#   3. the raw STATUS answers at that port, JSON and text, through hwtop's client (one query each, 10 s apart:
#      the manners hold here too), saved under tests/fixtures/nccl-ras/ (status.json, status.txt, version.txt).
# tests/probes/nccl_ras/test_fixtures.py parses whatever is there from then on. Only reads: nothing is set.
#
#   scripts/nccl-ras-check.sh [OUT_DIR]        (default tests/fixtures/nccl-ras)
set -u
here="$(cd "$(dirname "$0")/.." && pwd)"
out="${1:-$here/tests/fixtures/nccl-ras}"
mkdir -p "$out"
export PYTHONUNBUFFERED=1 PYTHONPATH="$here${PYTHONPATH:+:$PYTHONPATH}"
free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
ras_port="$(free_port)"
export MASTER_ADDR=127.0.0.1 MASTER_PORT="$(free_port)" NCCL_RAS_ADDR="127.0.0.1:$ras_port"
python3 "$here/scripts/nccl_allreduce.py" > "$out/job.log" 2>&1 &
job=$!
trap 'kill "$job" 2>/dev/null; wait "$job" 2>/dev/null' EXIT
for _ in $(seq 1 120); do  # NCCL initialises before the first all-reduce: no query before "ready"
    grep -q '^ready' "$out/job.log" && break
    kill -0 "$job" 2>/dev/null || { echo "the all-reduce job ended:"; cat "$out/job.log"; exit 1; }
    sleep 1
done
grep '^ready' "$out/job.log" | sed 's/^ready: //' > "$out/version.txt"
sleep 5  # past init: RAS answers with init_state 0

echo "== doctor --pid $job (NCCL_RAS_ADDR=$NCCL_RAS_ADDR)"
timeout 120 python3 -m hwtop doctor --pid "$job" --seconds 40 --json > "$out/doctor.json"
echo "== doctor exit $?"
timeout 120 python3 -m hwtop doctor --pid "$job" --seconds 25 > "$out/doctor.txt"
echo "== doctor exit $?"
address="$(python3 -c 'import json, sys; print((json.load(open(sys.argv[1]))["job"].get("nccl") or {}).get("address", ""))' "$out/doctor.json")"
echo "== the RAS address doctor found: ${address:-none} (expected $NCCL_RAS_ADDR)"
[ -n "$address" ] || address="$NCCL_RAS_ADDR"

python3 - "$address" "$out" <<'PY'
import sys
import time
from pathlib import Path

from hwtop.probes.nccl_ras.client import RasError, parse_address, query

address, out = parse_address(sys.argv[1]), Path(sys.argv[2])
for index, (want_json, name) in enumerate(((True, "status.json"), (False, "status.txt"))):
    if index:
        time.sleep(10)  # hwtop's own interval between queries
    try:
        raw = query(address, want_json=want_json)
    except RasError as error:
        print(f"== {name}: {error}")
        continue
    (out / name).write_text(raw.text)
    print(f"== {name}: {len(raw.text)} bytes, format {raw.format}, server protocol {raw.server_protocol}")
PY
ls -l "$out"
