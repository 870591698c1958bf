"""The finish users expect: filter, tree view, sorting by any column, the command palette listing every action,
themes and NO_COLOR, the config file, a terminal shrunk to 20x6 and back, and help covering every key."""

from __future__ import annotations

import os

import pytest
from hypothesis import given
from hypothesis import strategies as st
from msgspec.structs import replace

from hwtop.tui import textual_compat
from hwtop.tui.app import PALETTE, HwtopApp
from hwtop.widgets.processes import Row, filter_rows, tree_rows
from tests.factories import ScriptedSource, host_snapshot


async def started(app: HwtopApp, pilot) -> None:
    await app.first_frame.wait()
    await pilot.pause()


def pids(app: HwtopApp) -> list[int]:
    return [row.pid for row in app.main.process_table.rows_shown]


@pytest.mark.slow  # over the fast suite's minute on two cores (--durations)
async def test_filter_by_name_and_escape_clears() -> None:
    app = HwtopApp(ScriptedSource([host_snapshot()]))
    async with app.run_test(size=(120, 40)) as pilot:
        await started(app, pilot)
        assert app.filter_input is None  # made on first use: not on the first frame's path
        await pilot.press("slash")
        assert app.filter_input is not None and app.filter_input.display and app.filter_input.has_focus
        await pilot.press(*"sshd")
        await pilot.pause()
        assert pids(app) == [812]
        assert "filter 'sshd'" in str(app.main.process_table.border_subtitle)
        await pilot.press("escape")
        await pilot.pause()
        assert pids(app) == [41000, 41010, 812] and not app.filter_input.display
        await pilot.press("slash")  # the same line again, not a second one
        await pilot.pause()
        assert len(app.query("#filter")) == 1 and app.filter_input.display and app.filter_input.value == ""


@pytest.mark.slow  # over the fast suite's minute on two cores (--durations)
async def test_tree_view_puts_children_under_parents() -> None:
    base = host_snapshot()
    processes = tuple(reversed(base.processes))  # the child first: the tree must still order it after its parent
    app = HwtopApp(ScriptedSource([replace(base, processes=processes)]))
    async with app.run_test(size=(120, 40)) as pilot:
        await started(app, pilot)
        await pilot.press("T")
        await pilot.pause()
        rows = app.main.process_table.rows_shown
        order = [r.pid for r in rows]
        assert order.index(41000) < order.index(41010)
        assert next(r for r in rows if r.pid == 41010).depth == 1
        command = str(app.main.process_table.get_row_at(order.index(41010))[-1])
        assert command.startswith("  └ python train.py")


async def test_any_column_header_sorts() -> None:
    app = HwtopApp(ScriptedSource([host_snapshot()]))
    async with app.run_test(size=(160, 40)) as pilot:
        await started(app, pilot)
        table = app.main.process_table
        for key, expected in (("user", [41000, 41010, 812]), ("threads", [41000, 41010, 812]),
                              ("command", [41000, 41010, 812])):
            table.sort_key = key
            table.redraw()
            await pilot.pause()
            assert pids(app) == expected, key
        table.sort_key = "user"
        table.redraw()
        assert [r.user for r in table.rows_shown] == sorted(r.user for r in table.rows_shown)


async def test_the_command_palette_lists_every_action() -> None:
    app = HwtopApp(ScriptedSource([host_snapshot()]))
    async with app.run_test(size=(120, 40)) as pilot:
        await started(app, pilot)
        titles = {command.title for command in app.get_system_commands(app.screen)}
        assert {title for title, _, _ in PALETTE} <= titles
        bound = {b.action.split("(")[0] for b in HwtopApp.BINDINGS} - {"quit", "replay_step", "replay_seek",
                                                                        "replay_speed", "refresh_topology"}
        assert bound <= {action for _, _, action in PALETTE}  # every key's action is in the palette


def test_help_covers_every_key() -> None:
    from hwtop.tui.help import KEYS

    documented = {key for key, _ in KEYS}
    display = {"question_mark": "?", "slash": "/", "full_stop": ".", "comma": ",", "right_square_bracket": "]",
               "left_square_bracket": "[", "plus,equals_sign": "+", "minus": "-"}
    for binding in HwtopApp.BINDINGS:
        key = display.get(binding.key, binding.key)
        assert key in documented, f"{binding.key} ({binding.action}) is not on the ? screen"


def test_help_option_lists_every_option(capsys) -> None:
    from hwtop.cli.main import build_parser

    parser = build_parser()
    text = parser.format_help()
    for action in parser._actions:
        for option in action.option_strings:
            assert option in text


@pytest.mark.slow  # over the fast suite's minute on two cores (--durations)
async def test_a_terminal_shrunk_to_20x6_and_back_keeps_drawing() -> None:
    app = HwtopApp(ScriptedSource([host_snapshot()]), interval=0.05)
    async with app.run_test(size=(120, 40)) as pilot:
        await started(app, pilot)
        before = (app.main.panels["cpu"].size, app.main.panels["gpu"].size, app.main.process_table.row_count)
        await pilot.resize_terminal(20, 6)
        ticks = app.ticks
        while app.ticks < ticks + 3:
            await pilot.pause(0.05)
        await pilot.resize_terminal(120, 40)
        ticks = app.ticks
        while app.ticks < ticks + 2:
            await pilot.pause(0.05)
        await pilot.pause(0.1)
        assert app.is_running
        assert (app.main.panels["cpu"].size, app.main.panels["gpu"].size, app.main.process_table.row_count) == before


def test_themes_and_no_color(monkeypatch) -> None:
    assert HwtopApp(ScriptedSource([host_snapshot()]), theme="light").theme == "textual-light"
    assert HwtopApp(ScriptedSource([host_snapshot()])).theme == "textual-dark"
    monkeypatch.delenv("NO_COLOR", raising=False)
    mono = HwtopApp(ScriptedSource([host_snapshot()]), theme="mono")
    assert mono.no_color and "NO_COLOR" not in os.environ  # monochrome without touching the environment
    assert any(type(f).__name__ in ("Monochrome", "NoColor") for f in textual_compat.line_filters(mono))
    assert not HwtopApp(ScriptedSource([host_snapshot()])).no_color
    monkeypatch.setenv("NO_COLOR", "1")
    assert HwtopApp(ScriptedSource([host_snapshot()])).no_color  # Textual's monochrome filter


async def test_hidden_panels_from_the_config() -> None:
    app = HwtopApp(ScriptedSource([host_snapshot()]), hide=("disks", "memory"))
    async with app.run_test(size=(120, 40)) as pilot:
        await started(app, pilot)
        panels = app.main.panels
        assert not panels["disks"].display and not panels["memory"].display and panels["cpu"].display


def test_config_file(tmp_path) -> None:
    from hwtop.session.config import load

    path = tmp_path / "config.toml"
    path.write_text('[ui]\ninterval = 0.5\ntheme = "light"\nhide = ["disks"]\n\n[advice.thresholds]\n'
                    "data_wait_fraction = 0.4\n")
    os.chmod(path, 0o600)
    config = load(str(path))
    assert (config.interval, config.theme, config.hide) == (0.5, "light", ("disks",))
    assert config.thresholds["data_wait_fraction"] == 0.4
    for text, message in (("[ui]\nspeed = 2\n", "ui.speed: unknown key; known: interval, theme, hide"),
                          ("[ui]\ntheme = \"pink\"\n", "ui.theme = 'pink': expected one of dark, light, mono"),
                          ("[ui]\nhide = [\"clock\"]\n", "ui.hide = ['clock']: expected a list of any of: cpu,"),
                          ("[ui]\ninterval = 0\n", "ui.interval = 0: expected a number of seconds more than 0"),
                          ("[colours]\nx = 1\n", "colours: unknown key; known: ui, advice")):
        path.write_text(text)
        with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)").replace("[", r"\[")):
            load(str(path))


@st.composite
def process_forests(draw):
    count = draw(st.integers(0, 30))
    rows = []
    for pid in range(100, 100 + count):
        parent = draw(st.one_of(st.none(), st.integers(1, 100 + count)))
        rows.append(Row(pid, draw(st.sampled_from(["alice", "bob"])), None, None, None, "", None, None,
                        draw(st.sampled_from(["python train.py", "sshd", "bash"])), parent))
    return rows


@given(process_forests())
@pytest.mark.slow  # over the fast suite's minute on two cores (--durations)
def test_tree_rows_is_a_permutation_with_parents_first(rows) -> None:
    tree = tree_rows(rows)
    assert sorted(r.pid for r in tree) == sorted(r.pid for r in rows)
    position = {r.pid: i for i, r in enumerate(tree)}
    for row in tree:
        if row.ppid in position and row.ppid != row.pid and row.depth:
            assert position[row.ppid] < position[row.pid]


@given(process_forests(), st.text(max_size=6))
@pytest.mark.slow  # over the fast suite's minute on two cores (--durations)
def test_filter_rows_keeps_only_matches(rows, text) -> None:
    kept = filter_rows(rows, text)
    needle = text.lower().strip()
    assert all(not needle or needle in r.command.lower() or needle in r.user.lower() or str(r.pid).startswith(needle)
               for r in kept)
    assert len(kept) <= len(rows)
    assert all(r in kept for r in rows if needle and str(r.pid).startswith(needle))


def test_a_pid_is_found_from_its_first_digits() -> None:
    """Issue 48: `2443` found nothing, `24437` found it."""
    rows = [Row(24437, "alice", None, None, None, "", None, None, "python train.py"),
            Row(1244, "bob", None, None, None, "", None, None, "sshd")]
    assert [r.pid for r in filter_rows(rows, "2443")] == [24437]
    assert [r.pid for r in filter_rows(rows, "24437")] == [24437]


@pytest.mark.slow  # over the fast suite's minute on two cores (--durations)
async def test_a_click_on_a_gpu_shows_its_processes() -> None:
    from hwtop.widgets.gpu import GpuPanel
    from tests.factories import demo_snapshots

    app = HwtopApp(ScriptedSource(demo_snapshots("dgx-a100")))
    async with app.run_test(size=(200, 60)) as pilot:
        await started(app, pilot)
        panel = app.query_one(GpuPanel)
        layout = panel._layout
        line = next(i for i, (indices, _) in enumerate(layout) if 3 in indices)
        indices, width = layout[line]
        await pilot.click(GpuPanel, offset=(2 + indices.index(3) * width + 3, 1 + line))  # border + padding
        await pilot.pause()
        assert app.main.process_table.filter_text == "gpu:3"
        assert pids(app) == [41003]  # the rank on GPU 3
        await pilot.click(GpuPanel, offset=(2 + indices.index(3) * width + 3, 1 + line))
        await pilot.pause()
        assert app.main.process_table.filter_text == "" and len(pids(app)) > 1
