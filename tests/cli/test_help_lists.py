"""One list per fact: every profile, story and workload kind the code has is named in each help that offers it
(tested against the code's own lists, which the start does not load), `--demo list` keeps every name apart from
its description, and `fleet` refuses the options that mean nothing to it instead of ignoring them."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

from hwtop.cli import doctor, export, fleet, record, replay, report, snapshot, topo
from hwtop.cli.main import COMMANDS, OWN_PARSER, build_parser, command, run_command
from hwtop.cli.options import PROFILE_NAMES, STORY_NAMES, WORKLOAD_KINDS
from hwtop.demo.profiles import PROFILES
from hwtop.demo.story import SCALE_STORIES, STORIES
from hwtop.demo.variants import VARIANTS, listing

ROOT = Path(__file__).resolve().parents[2]
COMMAND_MODULES = {"snapshot": snapshot, "topo": topo, "doctor": doctor, "record": record, "replay": replay,
                   "export": export, "fleet": fleet, "report": report}  # pyright checks them: cli/main.py's _MODULES
MACHINE_OPTIONS = ("--demo", "--scenario", "--no-gpu")


def help_of(argv: list[str], monkeypatch: pytest.MonkeyPatch) -> str:
    """The help that `hwtop ARGV --help` prints, on a terminal wide enough that no name is split at a hyphen."""
    monkeypatch.setenv("COLUMNS", "1000")
    parser = build_parser(argv)
    if not argv:
        return parser.format_help()
    sub = next(a for a in parser._actions if a.dest == "command").choices[argv[0]]  # type: ignore[union-attr]
    return sub.format_help()


def test_the_help_s_lists_are_the_code_s_lists() -> None:
    assert PROFILE_NAMES == tuple(PROFILES)
    assert STORY_NAMES == (*STORIES, *SCALE_STORIES)  # every story `--demo list` names
    # the workload's kinds are named once (workload/kinds.py), and the job reads them from there
    from hwtop.workload.kinds import KINDS

    assert WORKLOAD_KINDS == list(KINDS) == ["balanced", "dataloader-bound", "amp-compare", "oom-ramp"]
    job = ast.parse((ROOT / "workload" / "job.py").read_text())  # beside torch: read from its source
    assert any(isinstance(node, ast.ImportFrom) and node.module == "hwtop.workload.kinds" for node in job.body)


@pytest.mark.parametrize("argv", [[], *([name] for name in COMMANDS if name not in OWN_PARSER | {"fleet", "replay"})],
                         ids=lambda argv: " ".join(argv) or "hwtop")
def test_every_help_that_offers_a_demo_names_every_profile_and_story(argv: list[str],
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    text = help_of(argv, monkeypatch)
    for name in (*PROFILES, *STORIES, *SCALE_STORIES):
        assert re.search(rf"[ (]{re.escape(name)}[,;)]", text), f"{name} is not in hwtop {' '.join(argv)} --help"


@pytest.mark.parametrize("argv", [[], ["doctor"]], ids=["hwtop", "doctor"])
def test_each_help_with_workload_names_every_workload_kind(argv: list[str],
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    text = help_of(argv, monkeypatch)
    assert f"of this kind{' meanwhile' if argv else ''}: {', '.join(WORKLOAD_KINDS)} (needs torch" in text


@pytest.mark.parametrize("name", ["fleet", "replay"])
def test_fleet_s_and_replay_s_help_offer_no_machine_of_their_own(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    text = help_of([name], monkeypatch)
    assert "--interval" in text
    for option in MACHINE_OPTIONS:
        assert option not in text


def test_demo_list_keeps_every_name_apart_from_its_description() -> None:
    lines = listing()
    for name in (*PROFILES, *VARIANTS, *STORIES, *SCALE_STORIES):
        line = next(line for line in lines if line.split(" ", 1)[0] == name or line.strip().split(" ", 1)[0] == name)
        assert re.match(rf"\s*{re.escape(name)} +\S", line), line
    indented = [line for line in lines if line.startswith("  ")]  # driver variants and stories: one column
    assert len({re.match(r"\s*\S+ +", line).end() for line in indented}) == 1  # type: ignore[union-attr]


@pytest.mark.parametrize("argv", [
    ["fleet", "--demo", "dgx-a100", "a:9400"], ["--demo", "dgx-a100", "fleet", "a:9400"],
    ["fleet", "--scenario", "starved", "a:9400"], ["--demo", "dgx-a100", "--scenario", "oom", "fleet", "a:9400"],
    ["fleet", "--no-gpu", "a:9400"], ["--no-gpu", "fleet", "--prometheus", "http://127.0.0.1:9"],
])
def test_fleet_refuses_the_options_it_would_ignore(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stop:
        run_command(argv)
    assert stop.value.code == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert re.fullmatch(r"hwtop: error: --(demo|scenario|no-gpu) and fleet cannot be used together: fleet shows "
                        r"[^\n]+\n", captured.err), captured.err


@pytest.mark.parametrize("argv", [["replay", "r.jsonl", "--no-gpu"], ["--scenario", "oom", "replay", "r.jsonl"]])
def test_replay_refuses_a_machine_of_its_own(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stop:
        run_command(argv)
    assert stop.value.code == 2
    assert capsys.readouterr().err == (f"hwtop: error: {argv[-1] if argv[0] == 'replay' else argv[0]} and replay FILE "
                                       "cannot be used together: a recording brings its own machine\n")


def test_hwtop_fleet_demo_exits_2_with_one_line() -> None:
    result = subprocess.run([sys.executable, "-m", "hwtop", "fleet", "--demo", "dgx-a100"], capture_output=True,
                            text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert (result.returncode, result.stdout) == (2, "")
    assert result.stderr.count("\n") == 1 and result.stderr.startswith("hwtop: error: --demo and fleet "), result.stderr


def test_the_dispatch_table_reaches_a_module_for_every_command() -> None:
    for name in COMMANDS:
        module = command(name)
        assert isinstance(module, ModuleType) and module.__name__ == f"hwtop.cli.{name}"
        assert callable(getattr(module, "run", None)), name
        assert (name in OWN_PARSER) != callable(getattr(module, "add_options", None)), name
    assert set(COMMAND_MODULES) == set(COMMANDS) - OWN_PARSER


def test_the_keys_the_help_names_are_the_monitor_s_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    from hwtop.widgets.keys import MAIN

    named = re.search(r"Keys in the monitor: ([^.]+)\.", help_of([], monkeypatch))
    assert named is not None
    bound = {key.shown: key.label.lower() for key in MAIN}
    for pair in named.group(1).split(", "):
        key, word = pair.split(" ", 1)
        assert key in bound and bound[key] in word, pair
