"""The topology screen's NUMA lines read the monitor's own NUMA figures: on the demo's DGX A100 each node is half
of the 2 TiB the memory panel shows (not 515,625 MiB), its "used" the panel's."""

from __future__ import annotations

import re

import pytest

from hwtop.cli.main import make_sampler
from hwtop.tui.app import HwtopApp
from hwtop.widgets.format import human_bytes


@pytest.mark.slow  # over the fast suite's minute on two cores (--durations)
async def test_the_topology_screen_numa_lines_are_the_memory_panels() -> None:
    app = HwtopApp(make_sampler("dgx-a100", no_gpu=False), interval=0.3)
    async with app.run_test(size=(200, 60)) as pilot:
        await app.first_frame.wait()
        await pilot.press("t")
        for _ in range(60):
            await pilot.pause(0.05)
            if app.topology_screen is not None and app.screen is app.topology_screen and \
                    app.topology_screen.panel.numa is not None:
                break
        screen = app.topology_screen
        assert screen is not None and app.snapshot is not None and app.snapshot.numa is not None
        numa = screen.panel.numa
        assert numa is not None
        lines = [line.plain for line in screen.panel.lines(200) if line.plain.startswith("node ")]
        assert len(lines) == 2
        for line, node in zip(lines, numa.nodes, strict=True):
            used, total = re.search(r"mem (\S+) used of (\S+)", line).groups()
            assert total == "1.0T" and used == human_bytes(node.memory_used_bytes)
        assert sum(n.memory_total_bytes or 0 for n in numa.nodes) == app.snapshot.memory.total_bytes
