"""The fleet's table at a thousand hosts, at 80x24: only the rows on screen are made into cells; hosts with
findings come first; `/` filters by host, GPU model, job (an owner label) or finding; `s` sorts by the next column;
the summary line (hosts up and down, GPUs, GPUs idle, findings by rule) fits; enter shows a host's GPUs and
findings."""

from __future__ import annotations

import pytest
from textual.pilot import Pilot

from hwtop.advice.thresholds import Thresholds
from hwtop.fleet.model import FindingRow, GpuRow, HostView
from hwtop.fleet.sources import Ask, Round
from hwtop.tui.fleet import host_table
from hwtop.tui.fleet.app import FleetApp
from hwtop.tui.fleet.host_screen import FleetHostScreen
from tests.small_screen import screen_lines

HOSTS = 1000


def _host(i: int) -> HostView:
    if i in (500, 501):
        return HostView(f"http://gpu{i:04d}:9400/metrics", f"gpu{i:04d}", error="unreachable: Connection refused")
    model = "NVIDIA L4" if i % 100 == 7 else "NVIDIA H100 80GB HBM3"
    owner = f"pretrain-{i // 32:02d}" if i < 320 else ""
    gpus = tuple(GpuRow(str(g), model, f"GPU-{i}-{g}", 0.0 if (i + g) % 10 == 0 else 90.0, 1000.0, 80000.0, 545.0,
                        owner=owner) for g in range(8))
    findings = (FindingRow("warning", "gpu-throttled", "GPU3"),) if i % 97 == 0 else ()
    return HostView(f"http://gpu{i:04d}:9400/metrics", f"gpu{i:04d}", gpus, findings, hwtop=True,
                    cpu_busy=float(i % 90))


class Thousand:
    description, interval, job, reads_jobs = "1000 exporters", 60.0, None, False
    thresholds = Thresholds()

    def __init__(self) -> None:
        self.asks: list[Ask] = []

    def read(self, ask: Ask) -> Round:
        self.asks.append(ask)
        return Round(tuple(_host(i) for i in range(HOSTS)))

    def close(self) -> None:
        pass


def _names(lines: list[str]) -> list[str]:
    return [line.split()[0] for line in lines if line.startswith(" gpu")]


async def _ready(app: FleetApp, pilot: Pilot) -> None:
    while app.hosts_screen.table.row_count < HOSTS:
        await pilot.pause(0.02)
    await pilot.pause()


async def test_a_thousand_hosts_draw_only_the_rows_on_screen(monkeypatch) -> None:  # noqa: ANN001
    made: list[str] = []
    real = host_table.row_cells
    monkeypatch.setattr(host_table, "row_cells", lambda view, *a: made.append(view.name) or real(view, *a))
    app = FleetApp(Thousand())
    async with app.run_test(size=(80, 24)) as pilot:
        await _ready(app, pilot)
        assert app.hosts_screen.table.row_count == HOSTS
        assert 0 < len(set(made)) <= 24, len(set(made))  # the rows on screen, not a thousand
        lines = screen_lines(app)
        idle = sum(1 for i in range(HOSTS) for g in _host(i).gpus if g.util == 0.0)
        assert lines[1].startswith(f"998/1000 up · 2 down · 7984 GPUs · {idle} idle · ")
        assert lines[1].rstrip()[-1] == "…"
        assert len(lines[1].rstrip()) <= 80  # the findings by rule cut to the terminal, the counts before them whole
        # findings first: the eleven hosts with gpu-throttled (0, 97, ... 970) and the two down, then the rest
        assert _names(lines)[:3] == ["gpu0500", "gpu0501", "gpu0000"], lines
        made.clear()
        await pilot.press("pagedown")
        await pilot.pause()
        assert 0 < len(set(made)) <= 24


@pytest.mark.slow  # over the fast suite's minute on two cores (--durations)
async def test_slash_filters_by_host_model_job_and_finding_and_s_sorts() -> None:
    app = FleetApp(Thousand())
    async with app.run_test(size=(80, 24)) as pilot:
        await _ready(app, pilot)
        table = app.hosts_screen.table
        await pilot.press("slash", *"l4")
        await pilot.pause()
        assert table.row_count == 10 and all(v.gpu_models == "8x L4" for v in table.hosts)
        await pilot.press("backspace", "backspace", *"pretrain-03")  # the hpc_job owner label of hosts 96..127
        await pilot.pause()
        assert [v.name for v in table.hosts] == [f"gpu{i:04d}" for i in (97, *range(96, 97), *range(98, 128))]
        for _ in range(len("pretrain-03")):
            await pilot.press("backspace")
        await pilot.press(*"throttled", "enter")
        await pilot.pause()
        assert table.row_count == 11 and all(v.top_finding is not None for v in table.hosts)
        assert any("throttled" in line for line in screen_lines(app)[-3:])  # the kept filter stays in sight
        await pilot.press("slash", "escape")  # cleared
        await pilot.pause()
        assert table.row_count == HOSTS
        await pilot.press("s")
        await pilot.pause()
        header = next(line for line in screen_lines(app) if "HOST" in line)
        assert "HOST ▼" in header and [v.name for v in table.hosts[:2]] == ["gpu0000", "gpu0001"]
        await pilot.press("s")  # utilisation: the busiest first
        await pilot.pause()
        assert table.hosts[0].util_mean == 90.0 and table.hosts[-1].util_mean is None


@pytest.mark.slow  # over the fast suite's minute on two cores (--durations)
async def test_enter_shows_the_hosts_gpus_and_findings() -> None:
    app = FleetApp(Thousand())
    async with app.run_test(size=(80, 24)) as pilot:
        await _ready(app, pilot)
        app.hosts_screen.table.move_cursor(row=2)  # gpu0000: a finding
        await pilot.press("enter")
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, FleetHostScreen) and screen.view is not None and screen.view.name == "gpu0000"
        assert screen.table.row_count == 8 + 1  # its GPUs, then its finding
        assert "gpu-throttled" in str(screen.table.get_row_at(8)[1])
        assert str(screen.table.get_row_at(0)[7]) == "pretrain-00"  # who runs on the GPU
        await pilot.press("escape")
        await pilot.pause()
        assert app.screen is app.hosts_screen


async def _asked(pilot: Pilot, source: Thousand, host: str | None) -> bool:
    """Until a round asks for `host`'s own GPU fields (the ask changed: a round at once, not after 60 s)."""
    for _ in range(200):
        if source.asks and source.asks[-1].host == host:
            return True
        await pilot.pause(0.02)
    return False


@pytest.mark.slow  # over the fast suite's minute on two cores (--durations)
async def test_a_round_asks_the_open_hosts_own_fields_and_none_once_it_is_closed() -> None:
    source = Thousand()
    app = FleetApp(source)
    async with app.run_test(size=(80, 24)) as pilot:
        await _ready(app, pilot)
        assert all(ask.host is None for ask in source.asks)
        app.hosts_screen.table.move_cursor(row=2)  # gpu0000
        await pilot.press("enter")
        assert await _asked(pilot, source, "gpu0000"), source.asks
        await pilot.press("escape")
        assert await _asked(pilot, source, None), source.asks
