"""Render-cost helpers for benchmarks/tick.py: build widgets off-screen and time their text for one frame."""

from __future__ import annotations

import msgspec.structs

from tests.factories import demo_snapshots, host_snapshot


def render_costs(timed, ticks: int) -> list[tuple[str, float]]:
    """`timed(function, ticks)` is the caller's timer, so both tables are measured the same way."""
    from hwtop.model.history import History
    from hwtop.widgets.cpu import CpuPanel
    from hwtop.widgets.gpu import GpuPanel

    out = []
    for cores in (2, 256):
        snap = host_snapshot(cores=cores, nodes=8 if cores >= 8 else 1)
        panel = CpuPanel()
        panel.cpu, panel.numa = snap.cpu, snap.numa
        out.append((f"CPU panel, {cores} cores, 200 cols", timed(lambda p=panel: p.lines(196), ticks)))
    snaps = demo_snapshots("dgx-a100", count=3)
    history = History()
    for s in snaps:
        history.push(s)
    for count in (8, 16):
        gpus = snaps[-1].gpus
        if count == 16:
            gpus = gpus + tuple(msgspec.structs.replace(g, index=g.index + 8) for g in gpus)
        panel = GpuPanel()
        panel.gpus, panel.history = gpus, history
        out.append((f"GPU panel, {count} GPUs, 200 cols", timed(lambda p=panel: p.lines(196), ticks)))
    return out
