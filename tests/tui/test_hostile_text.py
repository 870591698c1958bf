"""Text other people control is shown, never obeyed: a hostile corpus (markup, escape sequences, C1 bytes, OSC 52,
4 KB names, undecodable bytes, newlines and tabs in argv) through every surface (process table, GPU process list,
job view, advice evidence, fleet table, replay, help, report, doctor, topo, dialogs, notifications), asserting the
literal text is on the screen and no control character or `@click` action reaches the rendered segments. A
hypothesis property does the same for any text in a row; under tmux, real processes with hostile names."""

from __future__ import annotations

import dataclasses
import re
import shutil
import subprocess
import sys
import time
import uuid

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from msgspec.structs import replace
from rich.console import Console
from rich.segment import Segment
from rich.text import Text
from textual.app import App

from hwtop.model.finding import Finding
from hwtop.model.frame import Frame
from hwtop.model.job import JobProcess, JobSnapshot
from hwtop.model.safe_text import printable
from hwtop.model.snapshot import (
    GpuProcess,
    GpuSnapshot,
    GpuSystem,
    HostInfo,
    MemorySnapshot,
    ProcessInfo,
    Snapshot,
    TopoDevice,
    Topology,
)
from hwtop.tui import textual_compat
from hwtop.tui.app import HwtopApp
from hwtop.widgets.processes import ProcessTable, Row
from hwtop.widgets.safe_text import cell, data, visible
from tests.factories import T0, ScriptedSource, host_snapshot
from tests.tmux_pane import hwtop_command, tmux

CORPUS = {
    "close-tag": "[/x]",
    "click": "[@click=app.quit]",
    "bold": "[b]",
    "osc-title": "\x1b]0;pwn\x07",
    "clear": "\x1b[2J",
    "alt-screen": "\x1b[?1049h",
    "c1-csi": "\x9b6n",
    "osc52": "\x1b]52;c;cHduZWQ=\x07",
    "dcs": "\x1bP+q544e\x1b\\",
    "long": "L" * 4096,
    "bad-utf8": b"bad\xff\xfebytes".decode("utf-8", "surrogateescape"),
    "argv": "python\ttrain.py\n--lr 1",
}
HOSTILE = list(CORPUS.values())
UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\ud800-\udfff]")  # tabs too: a rendered segment has them expanded


def fragments(text: str, chars: int = 24) -> list[str]:
    """What of `text` must be on the screen: its printable form, each tab-separated part's start."""
    return [part[:chars] for part in printable(text).split("\t") if part]


def rendered(app: App) -> tuple[str, list[Segment]]:
    """The screen as Textual would send it: its text and its segments."""
    strips = textual_compat.screen_strips(app.screen)
    segments = [segment for strip in strips for segment in strip]
    return "\n".join("".join(segment.text for segment in strip) for strip in strips), segments


def assert_clean(segments: list[Segment]) -> None:
    for segment in segments:
        assert not UNSAFE.search(segment.text), repr(segment.text)
        meta = segment.style.meta if segment.style is not None else {}
        assert "@click" not in meta, (segment.text, meta)


def assert_shown(screen: str, texts: list[str], chars: int = 24) -> None:
    for text in texts:
        for fragment in fragments(text, chars):
            assert fragment in screen, (fragment, screen)


async def first_frame(app: HwtopApp, pilot) -> None:
    await app.first_frame.wait()
    await pilot.pause()


def hostile_processes(pid: int = 50000) -> tuple[ProcessInfo, ...]:
    return tuple(ProcessInfo(pid + i, 1, text[:12], text[:15], text, "R", 90.0 - i, 1 << 20, 1)
                 for i, text in enumerate(HOSTILE))


def hostile_snapshot(**changes: object) -> Snapshot:
    return replace(host_snapshot(), processes=hostile_processes(), **changes)  # type: ignore[arg-type]


# ----- the rule and the helper -----

def test_control_characters_become_visible_stand_ins_of_the_same_length():
    for text in HOSTILE:
        shown = printable(text)
        assert len(shown) == len(text) and not UNSAFE.search(shown.replace("\t", ""))
    assert printable("\x1b]0;pwn\x07") == "␛]0;pwn␇"
    assert printable("a\nb\r\x7f\x9b\x00") == "a␊b␍␡�␀"
    assert printable("tab\tkept [b] café ✓") == "tab\tkept [b] café ✓"
    assert printable("\udcff") == "�" and printable("line\u2028sep") == "line␤sep"


def test_data_is_never_markup_and_visible_keeps_styles():
    text = data("[@click=app.quit][b]x[/b] \x1b[2J", "bold")
    assert text.plain == "[@click=app.quit][b]x[/b] ␛[2J" and not text.spans and text.style == "bold"
    styled = Text.assemble(("GPU0 ", "bold"), ("\x1b]0;pwn\x07", "cyan"), " tail")
    cleaned = visible(styled)
    assert cleaned.plain == "GPU0 ␛]0;pwn tail"  # Rich itself drops the BEL of Text it is given
    assert [(s.start, s.end, s.style) for s in cleaned.spans] == [(s.start, s.end, s.style) for s in styled.spans]
    plain = data("plain")
    assert visible(plain) is plain  # nothing to clean: no copy


# ----- through the Pilot: every surface -----

async def test_process_table_shows_hostile_names_and_users_as_text():
    app = HwtopApp(ScriptedSource([hostile_snapshot()]))
    async with app.run_test(size=(250, 60)) as pilot:
        await first_frame(app, pilot)
        screen, segments = rendered(app)
        assert_shown(screen, HOSTILE)
        assert_shown(screen, [text[:10] for text in HOSTILE if "\t" not in text[:10]], chars=10)  # USER column
        assert_clean(segments)
        assert app.main.process_table.row_count == len(HOSTILE)
        await pilot.press("T")  # tree view: the same rows, indented
        await pilot.pause()
        screen, segments = rendered(app)
        assert_shown(screen, HOSTILE)
        assert_clean(segments)


async def test_gpu_process_list_and_gpu_names_are_text():
    """Processes NVML reports that the host table does not list, a GPU's name and MIG slice, and the gpu:0
    filter a click on a GPU sets."""
    gpu = GpuSnapshot(0, "[b]NVIDIA \x1b]0;pwn\x07 A100[/x]", "GPU-1", "0000:17:00.0", memory_total_bytes=80 << 30,
                      memory_used_bytes=1 << 30, util_percent=50.0,
                      processes=tuple(GpuProcess(70000 + i, "compute", 1 << 28, command=text)
                                      for i, text in enumerate(HOSTILE)))
    system = GpuSystem(True, None, "[@click=app.quit]550", "12.4", source="nvml")
    app = HwtopApp(ScriptedSource([replace(host_snapshot(), gpus=(gpu,), gpu_system=system)]))
    async with app.run_test(size=(250, 70)) as pilot:
        await first_frame(app, pilot)
        app.main.process_table.filter_text = "gpu:0"
        app.main.process_table.redraw()
        await pilot.pause()
        screen, segments = rendered(app)
        assert [r.pid for r in app.main.process_table.rows_shown] == sorted(70000 + i for i in range(len(HOSTILE)))
        assert_shown(screen, HOSTILE)
        assert "[b]␛]0;pwn␇ A100[/x]" in screen and "[@click=app.quit]550" in screen  # "NVIDIA " dropped
        assert_clean(segments)


def hostile_job() -> JobSnapshot:
    processes = tuple(
        JobProcess(pid=60000 + i, ppid=1, name=text[:15], cmdline=text, role=f"rank {i}", rank=i, depth=0,
                   state="R", cpu_percent=10.0, rss_bytes=1 << 20, threads=1, cpu_affinity=(0,),
                   cuda_visible_devices=text[:20], dataset_devices=((text[:8], 1),))
        for i, text in enumerate(HOSTILE))
    return JobSnapshot("pattern [@click=app.quit]\x1b]0;pwn\x07", (60000,), "running", processes, 10.0, 1 << 20,
                       message="\x1b[2J[b]cannot read /proc/60001/environ[/b]")


@pytest.mark.slow  # over the fast suite's minute on two cores (--durations)
async def test_job_view_shows_hostile_command_lines_as_text():
    app = HwtopApp(ScriptedSource([replace(host_snapshot(), job=hostile_job())]))
    async with app.run_test(size=(250, 80)) as pilot:
        await first_frame(app, pilot)
        await pilot.press("j")
        await pilot.pause()
        assert type(app.screen).__name__ == "JobScreen"
        screen, segments = rendered(app)
        assert "Job · pattern [@click=app.quit]␛]0;pwn␇" in screen  # the border title
        assert "␛[2J[b]cannot read /proc/60001/environ[/b]" in screen
        assert_shown(screen, HOSTILE, chars=12)
        assert_shown(screen, [f"CUDA_VISIBLE_DEVICES={text[:20]}" for text in HOSTILE], chars=30)
        assert_clean(segments)
        app.job_screen.panel.set_stack("Python stack of pid 60000", "Thread 1 \x1b]0;pwn\x07 [b]main[/b]", None)
        await pilot.pause()
        screen, segments = rendered(app)
        assert "Thread 1 ␛]0;pwn␇ [b]main[/b]" in screen
        assert_clean(segments)


def pressed_frames(count: int = 8) -> list[Snapshot]:
    """Host memory below 10% available for `count` seconds: the finding quotes the biggest processes."""
    memory = MemorySnapshot(256 << 30, 8 << 30, 248 << 30, 8 << 30, 1 << 30)
    processes = tuple(replace(p, rss_bytes=(100 - i) << 30) for i, p in enumerate(hostile_processes()))
    return [replace(host_snapshot(time=T0 + i), memory=memory, processes=processes) for i in range(count)]


@pytest.mark.parametrize("size", [(200, 60), (120, 24)])
@pytest.mark.slow  # over the fast suite's minute on two cores (--durations)
async def test_advice_evidence_quotes_hostile_commands_as_text(size):
    from tests.widgets.test_advice import warmed_app

    app = warmed_app(pressed_frames())
    async with app.run_test(size=size) as pilot:
        await first_frame(app, pilot)
        assert app.frame is not None and [f.id for f in app.frame.findings] == ["host-memory-pressure"]
        await pilot.press("a")  # expands it in place; on a short terminal, opens the advice screen
        await pilot.pause()
        screen, segments = rendered(app)
        for text in HOSTILE[:3]:
            assert printable(text)[:20] in screen
        assert "pid 50000 [/x] RSS" in screen and "pid 50001 [@click=app.quit] RSS" in screen
        assert_clean(segments)


async def test_fleet_table_and_host_screen_show_exporter_labels_as_text():
    from hwtop.fleet.model import FindingRow, GpuRow, HostView
    from hwtop.fleet.sources import DirectSource
    from hwtop.tui.fleet.app import FleetApp
    from hwtop.tui.fleet.host_screen import FleetHostScreen

    targets = [f"http://10.0.0.{i}:9400/metrics" for i in range(len(HOSTILE))] + ["http://10.0.1.1:9400/metrics"]
    views = {target: HostView(target, hostname=text, gpus=(GpuRow("0", model=text, util=50.0),),
                              findings=(FindingRow("critical", text[:20], text),), hwtop=True)
             for target, text in zip(targets, HOSTILE, strict=False)}
    views[targets[-1]] = HostView(targets[-1], error="unreachable: [b]\x1b]0;pwn\x07 refused")
    app = FleetApp(DirectSource(targets, interval=30, fetcher=lambda target, timeout: views[target]))
    async with app.run_test(size=(250, 40)) as pilot:
        while app.hosts_screen.table.row_count < len(targets):
            await pilot.pause(0.05)
        await pilot.pause()
        screen, segments = rendered(app)
        assert_shown(screen, HOSTILE, chars=12)
        assert "unreachable: [b]␛]0;pwn␇ refused" in screen
        assert_clean(segments)
        table = app.hosts_screen.table
        table.move_cursor(row=[v.name for v in table.hosts].index("[/x]"))
        await pilot.press("enter")  # that host's GPUs
        await pilot.pause()
        assert isinstance(app.screen, FleetHostScreen)
        screen, segments = rendered(app)
        assert " [/x] " in screen and "CRITICAL [/x]" in screen
        assert_clean(segments)


async def test_a_hostile_recording_replays_as_text(tmp_path):
    from hwtop.recording.replay import ReplaySource
    from hwtop.recording.store import Recorder, load

    snapshots = [hostile_snapshot(time=T0 + i, host=HostInfo("[b]box\x1b]0;pwn\x07", "6.8 [/x]", 10.0))
                 for i in range(3)]
    recorded = (Finding("[/x]\x1b]0;pwn\x07", "critical", "[b]Evil title\x1b[2J", ("seen [@click=app.quit] \x9b6n",),
                        ("fix \x1b]52;c;cHduZWQ=\x07",), scope="GPU0 [/x]"),
                Finding("made-up", "\x1b[31mfatal", "a severity hwtop does not know", ("none",), ()))
    path = tmp_path / "hostile.jsonl.gz"
    recorder = Recorder(str(path), 1.0, "[@click=app.quit]\x1b[2J")
    for snapshot in snapshots:
        recorder.write(Frame(snapshot, recorded))
    recorder.close()
    app = HwtopApp(ReplaySource(load(str(path))))
    async with app.run_test(size=(250, 60)) as pilot:
        await first_frame(app, pilot)
        await pilot.press("a")  # open the first recorded finding
        await pilot.pause()
        screen, segments = rendered(app)
        assert "[b]box␛]0;pwn␇" in screen and "6.8 [/x]" in screen  # the header
        assert_shown(screen, HOSTILE)
        assert "[b]Evil title␛[2J · GPU0 [/x]" in screen and "[[/x]␛]0;pwn␇]" in screen  # title, scope, id
        assert "seen [@click=app.quit] �6n" in screen and "fix ␛]52;c;cHduZWQ=␇" in screen
        assert "? ---- a severity hwtop does not know" in screen  # a made-up severity is shown, not a crash
        assert_clean(segments)


@pytest.mark.slow  # over the fast suite's minute on two cores (--durations)
async def test_help_shows_every_key_and_no_stray_tag():
    from hwtop.tui.help import KEYS

    app = HwtopApp(ScriptedSource([host_snapshot()]))
    async with app.run_test(size=(120, 50)) as pilot:
        await first_frame(app, pilot)
        await pilot.press("question_mark")
        await pilot.pause()
        screen, segments = rendered(app)
        assert "[/b]" not in screen and "[b]" not in screen
        for key, what in KEYS:
            assert f"{key:<8} {what}"[:60] in screen, key
        assert_clean(segments)


def hostile_facts():
    from hwtop.report.facts import gather

    facts = gather("dgx-a100")
    gpus = tuple(dataclasses.replace(g, name=f"{g.name} [@click=app.quit]\x1b]0;pwn\x07") for g in facts.gpus)
    return dataclasses.replace(facts, gpus=gpus, cpu_model="EPYC [b]\x9b6n", disks=(("[/x]\x1b[2J", "nvme"),),
                               source="demo:[b]x")


def test_report_text_keeps_its_marks_and_shows_facts_literally():
    from hwtop.report.checks import checks, tier
    from hwtop.report.render import text

    facts = hostile_facts()
    report = text(facts, tier(facts), checks(facts), storage_error="cannot measure /data\n[SHORT] forged")
    assert not UNSAFE.search(report.replace("\n", ""))
    assert "[@click=app.quit]␛]0;pwn␇" in report and "CPU: EPYC [b]�6n" in report and "[/x]␛[2J (nvme)" in report
    assert "  cannot measure /data␊[SHORT] forged" in report  # one line: the forged mark cannot start a line
    assert re.search(r"^  \[(ok   |SHORT|info )\] ", report, re.M)


@pytest.mark.slow  # over the fast suite's minute on two cores (--durations)
async def test_report_screen_keeps_its_marks(monkeypatch):
    from hwtop.report import facts as facts_module
    from hwtop.tui.report_screen import ReportScreen

    facts = hostile_facts()
    monkeypatch.setattr(facts_module, "gather", lambda demo=None: facts)
    app = HwtopApp(ScriptedSource([host_snapshot()]))
    async with app.run_test(size=(200, 70)) as pilot:
        await first_frame(app, pilot)
        await pilot.press("b")
        for _ in range(50):
            await pilot.pause(0.05)
            if isinstance(app.screen, ReportScreen) and app.screen.text is not None:
                break
        await pilot.pause()
        screen, segments = rendered(app)
        assert re.search(r"\[(ok   |SHORT|info )\] ", screen), screen  # the report's own marks, not tags
        assert "[@click=app.quit]␛]0;pwn␇" in screen and "EPYC [b]�6n" in screen
        assert_clean(segments)


def test_doctor_prints_hostile_evidence_one_line_each():
    from hwtop.advice.engine import AdviceEngine
    from hwtop.advice.thresholds import Thresholds
    from hwtop.cli.doctor.facts import BoxFacts
    from hwtop.cli.doctor.findings import Reported
    from hwtop.cli.doctor.render import report, text

    engine = AdviceEngine(Thresholds(hold_s={"host-memory-pressure": 0}))
    frame = pressed_frames(1)[0]
    (finding,) = engine.update(frame)
    facts = BoxFacts(1, None, "[b]box\x1b]0;pwn\x07", 0, "\x9b2J[/x]",
                     {"io-bound": "ValueError: \x1b[?1049h bad [/x]\n[CRITICAL] forged"}, ())
    out = text(report(1.0, facts, [Reported(finding, frame.time, frame.time)]))
    assert not UNSAFE.search(out.replace("\n", ""))
    assert "on [b]box␛]0;pwn␇," in out and "GPUs: �2J[/x]" in out
    assert "  seen: pid 50000 [/x] RSS" in out and "  seen: pid 50001 [@click=app.quit] RSS" in out
    assert "rule io-bound failed: ValueError: ␛[?1049h bad [/x]␊[CRITICAL] forged" in out
    assert not any(line.startswith("[CRITICAL] forged") for line in out.split("\n"))


def test_topo_prints_hostile_device_names_literally():
    from hwtop.cli.topo import render
    from hwtop.model.snapshot import NumaNode, NumaSnapshot

    nic = TopoDevice("[b]mlx\x1b]0;pwn\x07", "nic", "0000:3b:00.0", 0, (0, 1), 4, 16, 4, 16,
                     network_speed="\x9b2J")
    topology = Topology((nic,), (("X",),), (), "sysfs", disagreements=("GPU0 \x1b[2J\nforged",))
    numa = NumaSnapshot((NumaNode(0, (0, 1), 1 << 30, 1 << 29, (10,)),), "sysfs")
    out = render(topology, numa)
    assert not UNSAFE.search(out.replace("\n", ""))
    assert "[b]mlx␛]0;pwn␇" in out and "GPU0 ␛[2J␊forged" in out


@pytest.mark.slow  # over the fast suite's minute on two cores (--durations)
async def test_signal_dialog_and_notifications_show_text_as_text():
    from hwtop.probes.signals import Target
    from hwtop.tui.signal_dialog import SignalDialog

    app = HwtopApp(ScriptedSource([host_snapshot()]))
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        await first_frame(app, pilot)
        app.notify("cannot focus [b]\x1b]0;pwn\x07[@click=app.quit]x[/]")
        for _ in range(100):  # the toast is mounted over a few message rounds (more on a loaded box)
            await pilot.pause()
            screen, segments = rendered(app)
            if "cannot focus" in screen:
                break
        assert "cannot focus [b]␛]0;pwn␇[@click=app.quit]x[/]" in screen
        assert_clean(segments)
        await app.push_screen(SignalDialog(Target(4242, 1, "[@click=app.quit]\x1b[2J", 1000, "[/x] " + HOSTILE[3])))
        await pilot.pause()
        screen, segments = rendered(app)
        assert "user: [@click=app.quit]␛[2J" in screen and "command: [/x] ␛]0;pwn␇" in screen
        assert_clean(segments)


def test_log_lines_from_any_command_are_printable(tmp_path, capsys):
    """A path or a recording's words in an error line (written by replay's own code) reach stderr shown."""
    from hwtop.cli.main import main

    missing = tmp_path / "run\x1b]0;pwn\x07\x9b2J.jsonl"
    with pytest.raises(SystemExit) as exited:
        main(["replay", str(missing)])
    err = capsys.readouterr().err
    assert exited.value.code == 2 and err == f"hwtop: error: cannot read {printable(str(missing))}: No such file or " \
                                              "directory\n"
    assert "run␛]0;pwn␇�2J.jsonl" in err


# ----- any text at all -----

hostile_text = st.lists(
    st.one_of(st.text(st.characters(exclude_categories=()), max_size=40), st.sampled_from(HOSTILE[:9])),
    max_size=4).map("".join)
CONSOLE = Console(width=1000, color_system="truecolor", force_terminal=True, legacy_windows=False)
WHOLE_LINE = CONSOLE.options.update(no_wrap=True, overflow="ignore")


def squeezed(text: str) -> str:
    """Without whitespace: a tab is spaces once rendered, as many as its column needs."""
    return re.sub(r"\s", "", text)


@settings(max_examples=100, deadline=None)
@given(hostile_text, hostile_text)
@pytest.mark.slow  # over the fast suite's minute on two cores (--durations)
def test_any_text_in_a_row_renders_without_escape_or_action(command, user):
    """A process table row, through `cell` (LineTable passes every cell it is given through it) and Rich's
    rendering."""
    row = Row(1, user, 12.5, 1 << 20, 3, "0", 1 << 20, 40.0, command)
    texts = []
    for value in ProcessTable._cells(row, set()):
        stored = cell(value)
        assert isinstance(stored, Text)
        segments = [s for s in CONSOLE.render(stored, WHOLE_LINE) if s.text != "\n"]
        assert_clean(segments)
        texts.append("".join(s.text for s in segments))
    assert squeezed(texts[-1]) == squeezed(printable(command[:160]))  # the command, literal, on one line
    assert squeezed(texts[1]) == squeezed(printable(user[:10]))


# ----- a real terminal -----

@pytest.mark.slow
@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")
def test_hostile_processes_under_tmux_are_text_and_hwtop_stays_up(tmp_path):
    """`exec -a '[/x]'` and an OSC title in argv: both busy, both shown literally, hwtop up, the title unchanged."""
    busy = "while 1: pass"
    named = subprocess.Popen(["bash", "-c", f"exec -a '[/x]' {sys.executable} -c '{busy}'"])
    titled = subprocess.Popen([sys.executable, "-c", busy, "\x1b]0;PWNED\x07"])
    session = f"hwtop-hostile-{uuid.uuid4().hex[:8]}"
    marker = tmp_path / "status"
    command = hwtop_command("--no-gpu --interval 0.5", tmp_path, then=f"echo $? > {marker}; ")
    subprocess.run(["tmux", "new-session", "-d", "-s", session, "-x", "220", "-y", "60", command], check=True)
    try:
        title = tmux("display", "-p", "-t", session, "#{pane_title}")
        pane = lambda: tmux("capture-pane", "-p", "-t", session)  # noqa: E731
        end = time.monotonic() + 30
        while time.monotonic() < end and not ("Processes" in pane() and "[/x]" in pane() and "␛]0;PWNED␇" in pane()):
            time.sleep(0.3)
        screen = pane()
        assert f"{named.pid}" in screen and "[/x]" in screen, screen
        assert f"{titled.pid}" in screen and "␛]0;PWNED␇" in screen, screen
        time.sleep(2)  # a few more ticks with both on screen
        assert not marker.exists(), screen  # still running
        assert tmux("display", "-p", "-t", session, "#{alternate_on}").strip() == "1"
        assert tmux("display", "-p", "-t", session, "#{pane_title}") == title and "PWNED" not in title
        tmux("send-keys", "-t", session, "q")
        end = time.monotonic() + 15
        while time.monotonic() < end and not marker.exists():
            time.sleep(0.2)
        assert marker.read_text().strip() == "0"
    finally:
        tmux("kill-session", "-t", session)
        for process in (named, titled):
            process.kill()
            process.wait()
