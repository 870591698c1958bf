"""The README starts in one screen and docs/ is the reference, held to the code's own lists: every rule id, key,
exporter series, config field and threshold, command and option, demo profile, driver variant, story and workload
kind is documented, and every link between the pages lands."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import msgspec.structs
import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
README = ROOT / "README.md"
SET_UP = ("python3 -m pip install . && hwtop",
          "python3 -m pip install -e '.[test,torch]' torch==2.13.0 && python3 -m pytest")
# Textual's names for keys whose Key declares no display form
KEY_CHARACTERS = {"question_mark": "?", "full_stop": ".", "comma": ",", "slash": "/", "plus": "+", "minus": "-",
                  "equals_sign": "=", "left_square_bracket": "[", "right_square_bracket": "]"}


def page(name: str) -> str:
    return (DOCS / name).read_text(encoding="utf-8")


def quoted(text: str) -> set[str]:
    """Everything a page writes as code: `x`, and each part of `a|b` or `a, b` lists inside one pair of quotes."""
    spans = re.findall(r"`([^`\n]+)`", text)
    return set(spans) | {part.strip() for span in spans for part in re.split(r"[|,]|\\\|", span)}


def test_the_readme_starts_in_one_screen_with_the_two_set_up_commands() -> None:
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) < 120
    assert [line for line in lines[:40] if line in SET_UP] == list(SET_UP)
    assert re.search(r"!\[[^\]]+\]\(screenshots/[\w.-]+\.png\)", "\n".join(lines[:40]))


def test_ci_runs_the_readme_s_test_command() -> None:
    assert SET_UP[1] in (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()


def test_every_page_is_reached_from_the_readme_and_every_link_lands() -> None:
    pages = sorted(DOCS.glob("*.md"))
    readme = README.read_text(encoding="utf-8")
    for doc in pages:
        assert f"](docs/{doc.name})" in readme or doc.name == "snapshot-schema.md" and "docs/snapshot-schema.md" \
            in readme, f"the README does not link {doc.name}"
    for source in [README, *pages]:
        text = source.read_text(encoding="utf-8")
        for target in re.findall(r"\]\(([^)\s]+)\)", text):
            if re.match(r"[a-z]+:", target):
                continue
            path, _, anchor = target.partition("#")
            landed = (source.parent / path).resolve() if path else source
            assert landed.exists(), f"{source.name} links {target}, which is not there"
            if anchor and landed.suffix == ".md":
                assert anchor in anchors(landed.read_text(encoding="utf-8")), f"{source.name} links {target}"


def anchors(markdown: str) -> set[str]:
    """GitHub's anchors of a page's headings: lower case, punctuation dropped, spaces as hyphens."""
    return {re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")
            for heading in re.findall(r"^#+ (.+)$", markdown, re.MULTILINE)}


def test_every_rule_is_documented_once_with_its_severity() -> None:
    """docs/advice.md's tables against each rule's own declaration: its id once, and the most severe finding it
    raises, as `@rule(severity=...)` says."""
    from hwtop.advice.rules import RULES

    rows = re.findall(r"^\| `([a-z0-9-]+)` \| (\w+) \|", page("advice.md"), re.MULTILINE)
    assert sorted(rule for rule, _ in rows) == sorted(rule.id for rule in RULES)
    assert dict(rows) == {rule.id: rule.severity for rule in RULES}


def test_every_key_is_documented() -> None:
    from hwtop.widgets import keys

    documented = quoted(page("keys.md"))
    declared: set[str] = set()
    for value in vars(keys).values():
        if isinstance(value, tuple) and value and all(isinstance(key, keys.Key) for key in value):
            for key in value:
                declared |= {key.display} if key.display else {KEY_CHARACTERS.get(name, name)
                                                                for name in key.keys.split(",")}
        elif isinstance(value, tuple) and value and all(isinstance(line, tuple) for line in value):
            declared |= {shown for shown, _ in value}  # the lines of a ? screen that are not bindings
    assert len(declared) > 30  # the module's tables were found at all
    assert not declared - documented, f"docs/keys.md does not name {sorted(declared - documented)}"


def exporter_series() -> set[str]:
    """Every series name the exporter writes, from its source: the string constants that are metric names."""
    names = set()
    for path in (ROOT / "exporter").glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) \
                    and re.fullmatch(r"(DCGM_FI|hwtop|node)_\w+", node.value):
                names.add(node.value)
    return names


def test_every_exporter_series_is_documented() -> None:
    series = exporter_series()
    assert {"DCGM_FI_DEV_GPU_UTIL", "hwtop_finding", "hwtop_job_rank_seconds_total", "node_network_up"} <= series
    missing = sorted(series - quoted(page("exporter.md")))
    assert not missing, f"docs/exporter.md does not name {missing}"


def test_every_config_field_and_choice_is_documented() -> None:
    import typing

    from hwtop.session import config_file

    hints = {name: typing.get_type_hints(cls) for name, cls in (("ui", config_file.UiTable),
                                                                 ("advice", config_file.AdviceTable))}
    fields = [f"{table}.{name}" for table, names in hints.items() for name in names]
    assert fields == [f"ui.{f.name}" for f in msgspec.structs.fields(config_file.UiTable)] + \
        [f"advice.{f.name}" for f in msgspec.structs.fields(config_file.AdviceTable)]
    assert [f.name for f in msgspec.structs.fields(config_file.ConfigFile)] == ["ui", "advice"]
    documented = quoted(page("config.md"))
    missing = [name for name in [*fields, *config_file.PANELS, *typing.get_args(config_file.Theme)]
               if name not in documented]
    assert not missing, f"docs/config.md does not name {missing}"


def test_every_threshold_is_documented_with_its_default_and_unit() -> None:
    from hwtop.advice.rules import THRESHOLDS

    rows = {m[0]: (float(m[1]), m[2]) for m in re.findall(r"^\| `(\w+)` \| ([\d.e+-]+) \| (\S+) \|$",
                                                           page("config.md"), re.MULTILINE)}
    expected = {name: (float(entry.value), entry.unit) for name, entry in THRESHOLDS.items()}  # the rules' own too
    assert rows == expected


def test_every_command_and_option_is_documented() -> None:
    from hwtop.cli.main import COMMANDS, build_parser

    text = page("commands.md")
    documented = quoted(text)
    headings = re.findall(r"^## (.+)$", text, re.MULTILINE)
    parser = build_parser()
    subparsers = next(a for a in parser._actions if a.dest == "command").choices  # type: ignore[union-attr]
    for name in COMMANDS:
        assert any(f"`hwtop {name}`" in heading for heading in headings), f"no section for hwtop {name}"
    for name, sub in [("hwtop", parser), *subparsers.items()]:
        for action in sub._actions:
            if action.help == "==SUPPRESS==":
                continue
            for option in action.option_strings:
                assert any(option == part.split(" ")[0] for part in documented), f"{name} {option}"


def test_every_demo_profile_variant_story_and_workload_kind_is_documented() -> None:
    from hwtop.cli.options import WORKLOAD_KINDS
    from hwtop.demo.profiles import PROFILES
    from hwtop.demo.story import SCALE_STORIES, STORIES
    from hwtop.demo.variants import VARIANTS

    documented = quoted(page("demo.md"))
    for names in (PROFILES, VARIANTS, STORIES, SCALE_STORIES, WORKLOAD_KINDS):
        missing = [name for name in names if name not in documented]
        assert not missing, f"docs/demo.md does not name {missing}"


def test_every_option_of_the_embedded_job_is_documented() -> None:
    tree = ast.parse((ROOT / "workload" / "job.py").read_text(encoding="utf-8"))
    options = {node.args[0].value for node in ast.walk(tree) if isinstance(node, ast.Call)
               and isinstance(node.func, ast.Attribute) and node.func.attr == "add_argument"
               and node.args and isinstance(node.args[0], ast.Constant)}
    assert "--world-size" in options
    documented = {part.split(" ")[0] for part in quoted(page("demo.md"))}
    assert not options - documented, f"docs/demo.md does not name {sorted(options - documented)}"


@pytest.mark.parametrize("name", ["README.md", *sorted(p.name for p in DOCS.glob("*.md"))])
def test_no_page_cites_the_guide_by_where_it_came_from(name: str) -> None:
    text = (README if name == "README.md" else DOCS / name).read_text(encoding="utf-8")
    assert not re.search(r"conceived from|Chinese-language", text)
