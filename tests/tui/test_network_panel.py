"""The network panel on the main screen: one bare row on a short terminal (80x24), the GPUs still drawn; at
200x60 a bordered panel with two busy ports a line and the quiet ones folded; hidden with `hide = ["network"]`."""

from __future__ import annotations

import msgspec
import pytest

from hwtop.cli.main import make_sampler
from hwtop.tui.app import HwtopApp


async def run(size: tuple[int, int], spec: str = "dgx-a100:nccl-ethernet", hide: tuple[str, ...] = ()):
    app = HwtopApp(make_sampler(spec, no_gpu=False), interval=0.2, hide=hide)
    async with app.run_test(size=size) as pilot:
        while app.ticks < 3:
            await pilot.pause(0.05)
        await pilot.pause(0.1)
        panel = app.main.panels["network"]
        lines = [line.plain for line in panel.cached_lines(panel.content_size.width)]
        return panel.outer_size.height, panel.display, lines, app.main.panels["gpu"].outer_size.height


@pytest.mark.slow  # over the fast suite's minute on two cores (--durations)
async def test_at_80x24_one_row_names_the_busiest_port_and_the_gpus_stay() -> None:
    height, _, lines, gpu_rows = await run((80, 24), "dgx-a100")
    assert height == 1 and gpu_rows >= 3
    assert len(lines) == 1 and lines[0].startswith("Network enp22…f0 Eth    100Gb/s rx   0%")  # the dataset share
    assert lines[0].endswith(" N1 +9")
    quiet = await run((80, 24), "gtx1660s")  # a desktop's port carries no dataset: one quiet line
    assert quiet[0] == 1 and quiet[2] == ["Network 1 port quiet (1 Eth)"]


@pytest.mark.slow  # over the fast suite's minute on two cores (--durations)
async def test_at_200x60_busy_ports_two_a_line_the_quiet_folded() -> None:
    height, _, lines, _ = await run((200, 60))
    assert lines[:4] and all(line.count(" IB ") == 2 for line in lines[:4])
    assert lines[-1].startswith("+2 quiet (2 Eth)") and height == len(lines) + 2


@pytest.mark.slow  # over the fast suite's minute on two cores (--durations)
async def test_hidden_by_the_config() -> None:
    height, display, _, _ = await run((80, 24), "gtx1660s", hide=("network",))
    assert not display and height == 0


def test_the_row_budget_gives_the_network_its_rows_and_folds_it_to_one_bare_line() -> None:
    from hwtop.tui.layout import Shown, rows
    from hwtop.widgets.panel import Want
    from hwtop.widgets.processes import LEAST

    wants = {"cpu": Want(5, 5, 1), "disks": Want(3, 3, 1), "memory": Want(4, 2, 1),
             "gpu": Want(24, 8, 1, steps=(24, 16, 8, 2, 1)), "advice": Want.fixed(1, 0),
             "processes": Want.fixed(LEAST, frame=0)}
    base = Shown(200, 60, wants)

    def adding(shown: Shown, **more: Want) -> Shown:
        return msgspec.structs.replace(shown, wants={**shown.wants, **more})

    quiet = rows(adding(base, network=Want.fixed(1, frame=0)))
    busy = rows(adding(base, network=Want(4, 2, 1, bare_line=True)))
    without = rows(base)
    assert (without["network"], quiet["network"], busy["network"]) == (0, 1, 2)  # it folds before the GPUs leave 3
    assert busy["gpu"] == without["gpu"] == 24 and quiet["processes"] == without["processes"] - 1
    assert rows(adding(msgspec.structs.replace(base, height=70), network=Want(4, 2, 1, bare_line=True)))["network"] \
        == 4
    short = rows(adding(msgspec.structs.replace(base, height=24, width=80), network=Want(4, 2, 1, bare_line=True),
                        workload=Want(2, 2, 2)))
    assert short["network"] == 1 and short["processes"] >= 6  # one bare line: no border counted
