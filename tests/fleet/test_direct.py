"""`hwtop fleet URL...`: exporters polled directly. A duplicate target, a closed port and an endpoint that never
answers: the screen stays live, rows are worst first, totals count each GPU once (used of FB total), `q` quits at
once; bad addresses exit 2 with one line; text from outside is shown as literal characters."""

from __future__ import annotations

import io
import shutil
import socket
import subprocess
import sys
import threading
import time
import uuid
from contextlib import redirect_stderr
from pathlib import Path

import msgspec
import pytest

from hwtop.advice.thresholds import Thresholds
from hwtop.fleet.model import FindingRow, GpuRow, HostView, worst_first
from hwtop.fleet.scrape import parse
from hwtop.fleet.session import summarise
from hwtop.fleet.sources import Ask, DirectSource, Round, merge_same_host
from hwtop.fleet.targets import exporter_url, merge, prometheus_url, selector_matchers
from hwtop.tui.fleet.app import FleetApp
from hwtop.tui.fleet.host_screen import FleetHostScreen
from tests.exporter.test_exporter import StaticExporter, free_port

GIB_MIB = 1024
ROOT = Path(__file__).resolve().parents[2]


class Silent:
    """A port that accepts connections and never answers (an exporter stuck for 30 s and more)."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.sock.settimeout(0.2)
        self.port = self.sock.getsockname()[1]
        self.held: list[socket.socket] = []
        self.stop = threading.Event()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while not self.stop.is_set() and len(self.held) < 64:
            try:
                self.held.append(self.sock.accept()[0])
            except OSError:
                continue

    def close(self) -> None:
        self.stop.set()
        for conn in self.held:
            conn.close()
        self.sock.close()


@pytest.fixture(scope="module")
def two_exporters():
    first, second = StaticExporter("dgx-a100", hostname="node-dgx"), StaticExporter("h200", hostname="node-h200")
    yield first, second
    first.close()
    second.close()


def _rows(app: FleetApp) -> list[list[str]]:
    table = app.hosts_screen.table
    return [[str(getattr(cell, "plain", cell)) for cell in table.get_row_at(i)] for i in range(table.row_count)]


@pytest.mark.slow  # a long subprocess or network wait; CI runs it as a second step
async def test_duplicate_closed_and_silent_endpoints_keep_the_screen_live_and_q_quits_at_once(two_exporters):
    first, second = two_exporters
    silent, closed = Silent(), f"127.0.0.1:{free_port()}"
    targets = merge([first.url, f"127.0.0.1:{first.port}", f"http://127.0.0.1:{second.port}/", closed,
                     f"127.0.0.1:{silent.port}"])
    assert len(targets.urls) == 4 and len(targets.warnings) == 1 and "same exporter" in targets.warnings[0]
    source = DirectSource(list(targets.urls), interval=0.5, timeout=1.0, warnings=list(targets.warnings))
    app = FleetApp(source)
    try:
        async with app.run_test(size=(170, 30)) as pilot:
            deadline = time.monotonic() + 15
            while time.monotonic() < deadline:
                await pilot.pause(0.1)
                rows = _rows(app)
                if len(rows) == 4 and sum(r[1] == "up" for r in rows) == 2 and any("no answer" in r[1] for r in rows):
                    break
            rows = _rows(app)
            # worst first: the two hosts that do not answer, then the live ones by name
            assert [r[0] for r in rows[2:]] == ["node-dgx", "node-h200"], rows
            statuses = {r[9]: r[1] for r in rows}
            assert statuses[f"127.0.0.1:{silent.port}"] == "no answer within 1 s"
            assert statuses[closed] == "unreachable: Connection refused"
            assert [r[2] for r in rows[2:]] == ["8", "1"]
            title = str(app.hosts_screen.summary.render())
            used = sum(g.fb_used_mib or 0 for v in app.frame.hosts for g in v.gpus)
            # each GPU once, used of FB_TOTAL: 8 x 81920 MiB (A100 80GB) + 143771 MiB (H200), as nvidia-smi
            # reports them (used + free alone would miss the reserve)
            total_mib = 8 * 81920 + 143771
            assert "2/4 up · 2 down · 9 GPUs" in title and \
                f"{used / GIB_MIB:,.0f}/{total_mib / GIB_MIB:,.0f} GiB" in title, title
            assert 0 < used < total_mib
            assert "same exporter" in str(app.hosts_screen.warning_bar.render())
            # the UI answers while the silent endpoint's request is in flight: a tick that waited on it would take
            # its whole 1 s timeout; half of that leaves room for a loaded box
            started = time.monotonic()
            app.tick()
            assert time.monotonic() - started < 0.5
            app.hosts_screen.table.move_cursor(row=2)
            await pilot.press("enter")
            await pilot.pause()
            assert isinstance(app.screen, FleetHostScreen) and app.screen.table.row_count >= 8
            await pilot.press("escape")
            await pilot.pause()
            assert not isinstance(app.screen, FleetHostScreen)
            await pilot.press("down")
            quit_at = time.monotonic()
            await pilot.press("q")
        assert time.monotonic() - quit_at < 1.0
        # nothing left that would hold the interpreter's exit: the request threads are daemons
        assert all(t.daemon for t in threading.enumerate() if t.name.startswith("hwtop-fleet"))
    finally:
        silent.close()


class _Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def _view(url: str, host: str, uuids: tuple[str, ...], util: float = 50.0) -> HostView:
    gpus = tuple(GpuRow(str(i), "H100", u, util, 1000.0, 80000.0, 500.0) for i, u in enumerate(uuids))
    return HostView(url, host, gpus, hwtop=True)


@pytest.mark.slow  # over the fast suite's minute on two cores (--durations)
def test_a_request_past_its_deadline_is_shown_without_waiting_for_it():
    release = threading.Event()

    def fetcher(url: str, timeout: float) -> HostView:
        if "stuck" in url:
            release.wait(30)  # a name lookup that hangs: the deadline cannot stop it
            return HostView(url, error="late")
        return _view(url, "node1", ("GPU-1",), util=40.0)

    source = DirectSource(["http://stuck:9400/metrics", "http://node1:9400/metrics"], interval=1.0, timeout=0.1,
                          fetcher=fetcher)
    try:
        for _ in range(2):  # the second round does not ask the stuck exporter again, nor wait for it
            views = {v.address: v for v in source.read(Ask()).hosts or ()}
            assert views["http://stuck:9400/metrics"].error == "no answer within 0.1 s"
        assert views["http://node1:9400/metrics"].up and views["http://node1:9400/metrics"].trend == (40.0, 40.0)
    finally:
        release.set()
        source.close()


def test_two_exporters_reporting_the_same_gpus_count_once():
    views, warnings = merge_same_host([_view("http://a:9400/metrics", "n1", ("GPU-1", "GPU-2")),
                                       _view("http://n1.example:9400/metrics", "n1", ("GPU-2", "GPU-1")),
                                       _view("http://b:9400/metrics", "n1", ("GPU-3",))])
    assert [v.address for v in views] == ["http://a:9400/metrics", "http://b:9400/metrics"]
    assert warnings == ["http://n1.example:9400/metrics and http://a:9400/metrics report the same GPUs (n1): "
                        "shown once"]
    fleet = summarise(tuple(views), Thresholds())
    assert (fleet.gpus, fleet.used_mib, fleet.total_mib) == (3, 3000.0, 3 * 81500.0)


def test_worst_first_and_totals():
    ok = _view("u1", "a-ok", ("G1",))
    warn = msgspec.structs.replace(_view("u2", "b-warn", ("G2",)),
                                   findings=(FindingRow("warning", "gpu-throttled", "GPU0"),))
    crit = msgspec.structs.replace(_view("u3", "z-crit", ("G3",)),
                                   findings=(FindingRow("info", "x"), FindingRow("critical", "oom", "job")))
    down = HostView("http://c:9400/metrics", error="unreachable: Connection refused")
    assert [v.name for v in worst_first([ok, warn, crit, down])] == ["z-crit", "c", "b-warn", "a-ok"]
    assert crit.top_finding == FindingRow("critical", "oom", "job")
    no_total = GpuRow("0", fb_used_mib=100.0, fb_free_mib=900.0)  # an old dcgm-exporter: no FB_RESERVED/TOTAL
    assert no_total.memory_total_mib == 1000.0
    fleet = summarise((ok, warn, crit, down, HostView("u5", "old", (no_total,))), Thresholds())
    assert (fleet.hosts, fleet.up, fleet.down, fleet.gpus, fleet.used_mib, fleet.total_mib) == \
        (5, 4, 1, 4, 3100.0, 245500.0)
    assert fleet.findings == (("gpu-throttled", 1), ("oom", 1), ("x", 1))


def test_a_dcgm_exporter_page_parses_with_either_hostname_spelling_and_counters():
    page = ('# HELP DCGM_FI_DEV_GPU_UTIL GPU utilization (in %).\n# TYPE DCGM_FI_DEV_GPU_UTIL gauge\n'
            'DCGM_FI_DEV_GPU_UTIL{gpu="0",UUID="GPU-a",device="nvidia0",modelName="NVIDIA H100 80GB HBM3",'
            'hostname="node7"} 71\n'
            '# TYPE DCGM_FI_DEV_FB_USED gauge\nDCGM_FI_DEV_FB_USED{gpu="0",UUID="GPU-a",hostname="node7"} 40960\n'
            '# TYPE DCGM_FI_DEV_FB_FREE gauge\nDCGM_FI_DEV_FB_FREE{gpu="0",UUID="GPU-a",hostname="node7"} 40000\n'
            '# TYPE DCGM_FI_DEV_FB_RESERVED gauge\nDCGM_FI_DEV_FB_RESERVED{gpu="0",UUID="GPU-a"} 960\n'
            '# TYPE DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION counter\n'
            'DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{gpu="0",UUID="GPU-a"} 5e9\n')
    view = parse("http://node7:9400/metrics", page)
    assert view.hostname == "node7" and view.util_mean == 71 and view.memory == (40960, 81920)
    assert not view.hwtop and view.top_finding is None


@pytest.mark.parametrize(("text", "url"), [("node1:9400", "http://node1:9400/metrics"),
                                           ("HTTP://Node1:9400/", "http://node1:9400/metrics"),
                                           ("http://node1/metrics", "http://node1:80/metrics"),
                                           ("https://[::1]:9400/x", "https://[::1]:9400/x")])
def test_exporter_addresses_have_one_spelling(text, url):
    assert exporter_url(text) == url


def test_prometheus_address_and_selector():
    assert prometheus_url("prom:9090") == "http://prom:9090"
    assert prometheus_url("https://proxy/prometheus/api/v1/") == "https://proxy:443/prometheus"
    assert selector_matchers('{job="train", env=~"prod.*",}') == 'job="train", env=~"prod.*"'
    assert selector_matchers("{}") == ""


def _main_error(argv: list[str]) -> tuple[int, list[str]]:
    from hwtop.cli.main import main

    err = io.StringIO()
    with redirect_stderr(err), pytest.raises(SystemExit) as exit_:
        main(argv)
    return int(exit_.value.code or 0), err.getvalue().strip().splitlines()


@pytest.mark.parametrize(("args", "message"), [
    ((), "needs at least one exporter URL"),
    (("ftp://x",), "only http:// and https://"),
    (("host:99999",), "Port out of range"),
    (("host:abc",), "Port could not be cast"),
    (("http://",), "no host"),
    (("host:0",), "port must be 1-65535"),
    (("http://user:pw@host:9400",), "credentials"),
    (("host:9400", "--prometheus", "http://p:9090"), "not both"),
    (("--selector", '{job="x"}', "host:9400"), "--selector needs --prometheus"),
    (("--prometheus", "http://p:9090", "--selector", "job=train"), "not a series selector"),
    (("--prometheus", "p:70000"), "Port out of range"),
    (("--prometheus", "http://p:9090/?query=up"), "without a query"),
    (("--file", "/nonexistent/hwtop-targets"), "cannot read /nonexistent/hwtop-targets"),
])
def test_bad_fleet_usage_exits_2_with_one_line(args, message):
    code, lines = _main_error(["fleet", *args])
    assert code == 2 and len(lines) == 1 and message in lines[0] and lines[0].startswith("hwtop: error:"), lines


async def test_text_from_outside_is_literal():
    class Hostile:
        description, interval, job, reads_jobs = "[b]desc[/b]", 1.0, None, False
        thresholds = Thresholds()

        def read(self, ask: Ask) -> Round:
            view = _view("http://h:1/[red]", "[@click=app.quit]evil\x1b]0;pwn\x07", ("G1",))
            return Round((msgspec.structs.replace(view, findings=(FindingRow("warning", "[/x]rule", "GPU0"),)),),
                         "[/b]", ("[@click=app.quit]warn",))

        def close(self) -> None:
            pass

    app = FleetApp(Hostile())
    async with app.run_test(size=(250, 20)) as pilot:
        screen = app.hosts_screen
        while screen.table.row_count == 0:
            await pilot.pause(0.05)
        row = screen.table.get_row_at(0)
        assert row[0].plain == "[@click=app.quit]evil␛]0;pwn␇"
        assert row[9].plain == "http://h:1/[red]" and "[/x]rule" in row[7].plain
        assert not any("@click" in str(span.style) for cell in row for span in getattr(cell, "spans", []))
        assert "[b]desc[/b]" in str(screen.title_bar.render()) and "[/b]" in str(screen.title_bar.render())
        assert "[@click=app.quit]warn" in str(screen.warning_bar.render())
        await pilot.press("q")


def _tmux(*args: str) -> str:
    return subprocess.run(["tmux", *args], capture_output=True, text=True, check=False).stdout


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")
def test_the_command_in_a_terminal_quits_within_a_second_with_an_endpoint_that_never_answers(two_exporters,
                                                                                           tmp_path: Path):
    first, second = two_exporters
    silent, closed = Silent(), f"127.0.0.1:{free_port()}"
    session, marker = f"hwtop-fleet-{uuid.uuid4().hex[:8]}", tmp_path / "exit"
    # -u COLUMNS -u LINES: a tmux server started under pytest hands its panes COLUMNS=80, which Textual believes
    command = (f"env -u COLUMNS -u LINES PYTHONPATH={ROOT} {sys.executable} -m hwtop fleet {first.url} "
               f"127.0.0.1:{first.port} 127.0.0.1:{second.port} {closed} 127.0.0.1:{silent.port} --timeout 30; "
               f"echo $? > {marker}; sleep 30")
    _tmux("new-session", "-d", "-s", session, "-x", "170", "-y", "24", command)
    try:
        pane = lambda: _tmux("capture-pane", "-p", "-t", session)  # noqa: E731
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not ("node-h200" in pane() and "node-dgx" in pane()
                                                   and "Connection refused" in pane()):
            time.sleep(0.2)
        screen = pane()
        total_mib = sum((g.memory_total_bytes or 0) // (1 << 20)
                        for e in two_exporters for g in e.latest.frame.snapshot.gpus)
        assert "2/4 up · 2 down · 9 GPUs" in screen and f"/{total_mib / GIB_MIB:,.0f} GiB" in screen, screen
        assert "waiting for the first answer" in screen  # the silent one, with a 30 s deadline
        started = time.monotonic()
        _tmux("send-keys", "-t", session, "q")
        while time.monotonic() - started < 5 and not marker.exists():
            time.sleep(0.02)
        assert marker.exists() and time.monotonic() - started < 1.0
        assert marker.read_text().strip() == "0"
    finally:
        _tmux("kill-session", "-t", session)
        silent.close()


def test_bad_address_from_the_command_line_exits_2_in_one_line():
    result = subprocess.run([sys.executable, "-m", "hwtop", "fleet", "gpu-node:99999"], capture_output=True,
                            text=True, timeout=30)
    assert result.returncode == 2 and result.stderr.count("\n") == 1 and "Port out of range" in result.stderr
