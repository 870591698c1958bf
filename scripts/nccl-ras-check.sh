#!/usr/bin/env bash
# For a lent GPU machine (the `device` tool): NCCL's real RAS answers at the release torch ships, saved as fixtures
# for the parsers' tests beside those NCCL's code printed at each tag (tests/fixtures/nccl-ras/README.md).
#   1. a one-rank torch CUDA all-reduce loop (scripts/nccl_allreduce.py) with NCCL_RAS_ADDR on a free port;
#   2. the release, as hwtop learns it before any STATUS (the libnccl the rank maps, its wheel's dist-info, and
#      whether SET FORMAT json is answered OK), and the policy that gives (version.txt);
#   3. `hwtop doctor --pid` on it: which port hwtop found and what it made of the answers (doctor.json, .txt);
#   4. the raw answers at that port through hwtop's client, 10 s apart (the manners hold here too): STATUS in JSON
#      and in text, and, from 2.29, what a MONITOR connection receives while the job runs (status.json,
#      status.txt, monitor.json), under tests/fixtures/nccl-ras/device/VERSION/.
# tests/probes/nccl_ras/test_fixtures.py parses whatever is there from then on. Only reads: nothing is set.
#
#   scripts/nccl-ras-check.sh [OUT_DIR]        (default tests/fixtures/nccl-ras/device)
set -u
here="$(cd "$(dirname "$0")/.." && pwd)"
out="${1:-$here/tests/fixtures/nccl-ras/device}"
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
grep '^ready' "$out/job.log" | sed 's/^ready: //' > "$out/torch-version.txt"
sleep 5  # past init: RAS answers with init_state 0

echo "== the release, before any STATUS"
python3 - "$job" "$NCCL_RAS_ADDR" "$out" <<'PY'
import sys
from pathlib import Path

from hwtop.probes.nccl_ras import client, versions
from hwtop.probes.nccl_ras.watch import libnccl_path

pid, address, out = int(sys.argv[1]), client.parse_address(sys.argv[2]), Path(sys.argv[3])
path = libnccl_path(pid)
found = versions.version_of_library(path, f"/proc/{pid}/root") if path else None
json_ok = client.answers_json(address)
version = found[0] if found else None
said = versions.policy(version, json_ok, False)
lines = [f"libnccl mapped: {path}", f"release from the library: {found}", f"SET FORMAT json answered OK: {json_ok}",
         f"policy: {said.words}"]
(out / "version.txt").write_text("\n".join(lines) + "\n")
print("\n".join(lines))
PY
version_dir="$(python3 -c 'import re, sys; m = re.search(r"(\d+\.\d+\.\d+)", open(sys.argv[1]).read()); print(m[1] if m else "unknown")' "$out/torch-version.txt")"

echo "== doctor --pid $job (NCCL_RAS_ADDR=$NCCL_RAS_ADDR)"
timeout 120 python3 -m hwtop doctor --pid "$job" --seconds 40 --json > "$out/doctor.json"
echo "== doctor exit $?"
timeout 120 python3 -m hwtop doctor --pid "$job" --seconds 25 > "$out/doctor.txt"
echo "== doctor exit $?"
address="$(python3 -c 'import json, sys; print((json.load(open(sys.argv[1]))["job"].get("nccl") or {}).get("address", ""))' "$out/doctor.json")"
echo "== the RAS address doctor found: ${address:-none} (expected $NCCL_RAS_ADDR)"
[ -n "$address" ] || address="$NCCL_RAS_ADDR"

mkdir -p "$out/$version_dir"
python3 - "$address" "$out/$version_dir" <<'PY'
import sys
import time
from pathlib import Path

from hwtop.probes.nccl_ras.client import RasError, monitor, parse_address, query

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
try:  # 2.29+: lifecycle events; a one-rank job raises none unless a peer joins or dies, so 10 s of whatever comes
    sock, data = monitor(address)
    sock.settimeout(10)
    try:
        while chunk := sock.recv(1 << 16):
            data += chunk
    except TimeoutError:
        pass
    sock.close()
    (out / "monitor.json").write_bytes(data)
    print(f"== monitor.json: {len(data)} bytes")
except RasError as error:
    print(f"== MONITOR: {error}")
PY
ls -lR "$out"
