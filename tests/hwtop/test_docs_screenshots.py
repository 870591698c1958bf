"""The screenshots of the README and docs/ exist and come from demo machines: none names this machine (hostname,
kernel, paths); every story of the demo has its own."""

from __future__ import annotations

import html
import os
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def readme_shots() -> list[str]:
    """The screenshots the README and the pages of docs/ show."""
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    return [name for page in pages
            for name in re.findall(r"\]\((?:\.\./)?screenshots/([\w.-]+)\.png\)", page.read_text(encoding="utf-8"))]


def svg_text(name: str) -> str:
    svg = (ROOT / "screenshots" / f"{name}.svg").read_text(encoding="utf-8")
    return html.unescape("".join(re.findall(r">([^<]*)</text>", svg))).replace("\xa0", " ")


def test_every_readme_screenshot_has_its_svg_and_png() -> None:
    from hwtop.demo.story import STORIES

    shots = readme_shots()
    assert len(shots) >= 10 and {f"story-{story}-160x45" for story in STORIES} <= set(shots)
    for name in shots:
        assert (ROOT / "screenshots" / f"{name}.svg").is_file() and (ROOT / "screenshots" / f"{name}.png").is_file()


def test_no_readme_screenshot_shows_this_machine() -> None:
    machine = os.uname()
    own = [machine.nodename, machine.release, str(ROOT), "/work/", "/root/"]
    for name in set(readme_shots()):  # every one: a --pid shot of this machine stays out of the README
        text = svg_text(name)
        assert "hwtop" in text or "GPU" in text  # the text was found at all
        leaked = [word for word in own if word and re.search(rf"(?<![\w.-]){re.escape(word)}(?![\w-])", text)]
        assert not leaked, f"{name} shows {leaked}"
