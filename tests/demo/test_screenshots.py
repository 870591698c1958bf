"""The README's screenshots come from demo machines: none names this machine (hostname, kernel, paths)."""

from __future__ import annotations

import html
import os
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def readme_shots() -> list[str]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    return re.findall(r"\]\(screenshots/([\w.-]+)\.png\)", text)


def svg_text(name: str) -> str:
    svg = (ROOT / "screenshots" / f"{name}.svg").read_text(encoding="utf-8")
    return html.unescape("".join(re.findall(r">([^<]*)</text>", svg))).replace("\xa0", " ")


def test_every_readme_screenshot_has_its_svg_and_png() -> None:
    shots = readme_shots()
    assert len(shots) >= 10 and {f"story-{s}-160x45" for s in ("starved", "nccl-hang", "oom", "amp", "thermal")} \
        <= set(shots)
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
