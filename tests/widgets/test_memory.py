"""The memory panel's node lines mean by "used" what its RAM line means (total − available): on this machine, at
80x24 as on any size, the nodes' figures add up to the RAM line's (on one node: the same figure)."""

from __future__ import annotations

import re

from hwtop.cli.main import make_sampler
from hwtop.model.snapshot import MemorySnapshot, NumaNode, NumaSnapshot
from hwtop.tui.app import HwtopApp
from hwtop.widgets.memory import MemoryPanel

FIGURES = re.compile(r"^(\S+)\s.*?\s(\S+)/(\S+)$")
GIB = 1 << 30


def _rows(panel: MemoryPanel, width: int) -> dict[str, tuple[str, str]]:
    out = {}
    for line in panel.lines(width):
        match = FIGURES.match(line.plain.strip())
        if match:
            out[match.group(1)] = (match.group(2), match.group(3))
    return out


async def test_this_machines_ram_and_node_lines_agree_at_80x24() -> None:
    app = HwtopApp(make_sampler(None, no_gpu=True), interval=0.3)
    async with app.run_test(size=(80, 24)) as pilot:
        await app.first_frame.wait()
        await pilot.pause(0.1)
        snapshot = app.snapshot
        assert snapshot is not None and snapshot.numa is not None and snapshot.memory is not None
        rows = _rows(app.main.panels["memory"], app.main.panels["memory"].content_size.width)
        assert "RAM" in rows
        nodes = [n for n in snapshot.numa.nodes if n.memory_total_bytes]
        if snapshot.numa.source != "fallback" and len(nodes) == 1:
            assert rows["node0"] == rows["RAM"]  # one node is the machine: not 734.1M beside 443.6M
        used = [n.memory_used_bytes for n in nodes]
        assert None not in used and sum(u or 0 for u in used) == snapshot.memory.used_bytes


def test_two_nodes_share_the_machines_used_and_a_node_without_the_figure_says_n_a() -> None:
    panel = MemoryPanel()
    memory = MemorySnapshot(256 * GIB, 200 * GIB, 56 * GIB, 0, 0)
    nodes = (NumaNode(0, (0,), 128 * GIB, 90 * GIB, (10, 21), 100 * GIB, 28 * GIB),
             NumaNode(1, (1,), 128 * GIB, 90 * GIB, (21, 10), None, None))  # an old recording's node
    panel.memory, panel.numa = memory, NumaSnapshot(nodes, "sysfs")
    rows = _rows(panel, 40)
    assert rows["RAM"] == ("56.0G", "256.0G") and rows["node0"] == ("28.0G", "128.0G")
    assert rows["node1"] == ("N/A", "128.0G")  # not total − MemFree: a second meaning of "used"
