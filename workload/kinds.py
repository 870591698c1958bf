"""The embedded job's kinds, named once: each with what it changes in the job's options (the user's own options
win). Torch-free, so the command line's help, the monitor's w dialog and the job itself read the same list; a
kind is chosen with the job's --scenario option, and a demo's story is another thing (demo/story.py)."""

from __future__ import annotations

KINDS: dict[str, dict[str, float]] = {
    "balanced": {"num_workers": 2, "transform_cost": 0.2},
    "dataloader-bound": {"num_workers": 0, "transform_cost": 8.0},  # one process decodes every batch
    "amp-compare": {},  # the same steps in fp32, then in fp16 (bf16 on a CPU): the summary compares them
    "oom-ramp": {},  # the batch doubles until the device's memory runs out
}
