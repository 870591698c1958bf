"""The command line's parser is built for the command line it parses (cli.main.build_parser(argv)): the same
result as the whole parser, for less work at the monitor's start."""

from __future__ import annotations

import pytest

from hwtop.cli.main import build_parser

COMMAND_LINES = [
    [], ["--demo", "rtx3090", "--interval", "2"], ["snapshot", "--json", "--no-gpu"],
    ["--demo", "rtx3090", "snapshot", "--json", "--interval", "0.5"], ["topo", "--json"],
    ["doctor", "--seconds", "3", "--job", "train"], ["record", "out.jsonl", "--seconds", "5"],
    ["replay", "out.jsonl", "--speed", "2"], ["export", "--listen", ":9500", "--hostname", "box"],
    ["fleet", "a:9400", "--timeout", "1"], ["report", "--params", "1.2e8", "--amp"], ["workload"],
]


@pytest.mark.parametrize("argv", COMMAND_LINES, ids=lambda argv: " ".join(argv) or "monitor")
def test_a_parser_built_for_its_command_line_parses_it_as_the_whole_parser_does(argv: list[str]) -> None:
    whole, built_for_it = build_parser(), build_parser(argv)
    assert built_for_it.parse_known_args(argv) == whole.parse_known_args(argv)


def test_a_parser_built_for_the_monitor_adds_no_subcommand_options_and_still_lists_every_command() -> None:
    lean = build_parser([])
    commands = next(action for action in lean._actions if action.dest == "command")
    assert sorted(commands.choices) == sorted(next(a for a in build_parser()._actions if a.dest == "command").choices)
    assert [len(sub._actions) for name, sub in commands.choices.items() if name != "workload"] == [1] * 8  # -h only
    assert lean.format_help() == build_parser().format_help()
