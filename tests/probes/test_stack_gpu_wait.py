"""A GPU rank's own wait (issue 42): a main thread in a CUDA sync is "waiting for the GPU", not compute or other
Python. From py-spy stacks: torch.cuda.synchronize and Event.synchronize have frames of their own; .item(),
.cpu(), .tolist() and a blocking copy are C methods, seen as the job's own line that calls them."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from hwtop.probes.stack_classify import LABELS, Frame, classify, parse_raw

SITE = "/usr/lib/python3.12/site-packages/torch"


def script(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "train.py"
    path.write_text(body)
    return path


@pytest.mark.parametrize(("line", "waits"), [
    ("    loss_value = loss.item()", True), ("    preds = logits.argmax(1).cpu()", True),
    ("    ids = out.tolist()", True), ("    host = x.to('cpu', non_blocking=False)", True),
    ("    arr = t.detach().numpy()", True), ("    torch.cuda.current_stream().synchronize()", True),
    ("    batch = batch.to(device, non_blocking=True)", False), ("    total += 1  # .item() in a comment", False),
    ("    print(step)", False)])
def test_the_calling_line_says_it(tmp_path: Path, line: str, waits: bool) -> None:
    path = script(tmp_path, "def train():\n" + line + "\n")
    frames = [Frame("<module>", str(path), 1), Frame("train", str(path), 2)]
    assert (classify(frames, lambda p, n: Path(p).read_text().splitlines()[n - 1]) == "gpu-wait") is waits


def test_frames_of_their_own_and_precedence(tmp_path: Path) -> None:
    own = Frame("train", "/home/me/train.py", 3)
    assert classify([own, Frame("synchronize", f"{SITE}/cuda/__init__.py", 990)]) == "gpu-wait"
    assert classify([own, Frame("Event.synchronize", f"{SITE}/cuda/streams.py", 220)]) == "gpu-wait"
    assert classify([own, Frame("all_reduce", f"{SITE}/distributed/distributed_c10d.py", 1)]) == "collective"
    assert LABELS["gpu-wait"] == "waiting for the GPU"


def test_raw_samples_read_the_jobs_own_lines(tmp_path: Path) -> None:
    path = script(tmp_path, "for step in range(9):\n    loss.item()\n    x = y + 1\n")
    raw = (f"thread (77): MainThread;<module> ({path}:2) 30\n"
           f"thread (77): MainThread;<module> ({path}:3) 10\n")
    tally = parse_raw(raw, 77)  # pid 77 is not there: its lines are read from the path as given
    assert dict(tally.counts) == {"gpu-wait": 30, "other": 10}
    assert tally.sites["gpu-wait"].most_common(1)[0][0] == "train.py:2 <module>"


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["item", "tolist", "cpu", "to"])
def test_py_spy_stacks_of_a_script_that_syncs(kind: str) -> None:
    pytest.importorskip("torch")
    if shutil.which("py-spy") is None:
        pytest.skip("py-spy is not installed")
    job = Path(__file__).resolve().parents[1] / "jobs" / "cuda_sync.py"
    proc = subprocess.Popen([sys.executable, str(job), kind], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
        out = subprocess.run(["py-spy", "record", "--pid", str(proc.pid), "--duration", "3", "--rate", "50",
                              "--format", "raw", "--idle", "--threads", "--nonblocking", "--full-filenames", "--output",
                              "/dev/stdout"],
                             capture_output=True, text=True, timeout=60)
    finally:
        proc.kill()
        proc.wait()
    if "Permission denied" in out.stderr or "ptrace" in out.stderr.lower():
        pytest.skip("ptrace not permitted here")
    tally = parse_raw(out.stdout, proc.pid)
    assert tally.samples >= 20, out.stderr
    assert tally.counts["gpu-wait"] / tally.samples >= 0.3, dict(tally.counts)
