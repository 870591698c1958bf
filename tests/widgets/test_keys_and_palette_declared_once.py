"""Keys and colours are declared once: every key binding in widgets/keys.py, every colour in
widgets/palette.py. The other modules of tui/ and widgets/ only name them."""

from __future__ import annotations

import io
import re
import tokenize
from pathlib import Path

from rich.color import ANSI_COLOR_NAMES

ROOT = Path(__file__).resolve().parents[2]
SOURCES = sorted([*ROOT.glob("tui/*.py"), *ROOT.glob("widgets/*.py")])
WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*|#[0-9A-Fa-f]{3,8}\b|rgb\(")


def strings(path: Path) -> list[tuple[int, str]]:
    """The string literals of a module (the parts of f-strings too), with their line numbers."""
    kinds = {tokenize.STRING, getattr(tokenize, "FSTRING_MIDDLE", tokenize.STRING)}
    tokens = tokenize.generate_tokens(io.StringIO(path.read_text(encoding="utf-8")).readline)
    return [(token.start[0], token.string) for token in tokens if token.type in kinds]


def colour_words(text: str) -> list[str]:
    return [word for word in WORD.findall(text)
            if word.lower() in ANSI_COLOR_NAMES or word.startswith(("#", "rgb(", "ansi_"))]


def test_the_sources_are_found() -> None:
    names = {path.name for path in SOURCES}
    assert {"app.py", "keys.py", "palette.py", "cpu.py", "line_table.py"} <= names


def test_no_colour_name_outside_the_palette() -> None:
    found = [f"{path.relative_to(ROOT)}:{line}: {words}" for path in SOURCES if path.name != "palette.py"
             for line, text in strings(path) if (words := colour_words(text))]
    assert not found, "colours belong in widgets/palette.py:\n" + "\n".join(found)


def test_no_binding_outside_the_keys_module() -> None:
    found = [f"{path.relative_to(ROOT)}:{number}" for path in SOURCES if path.name != "keys.py"
             for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
             if re.search(r"\bBinding\(", line)]
    assert not found, "key bindings belong in widgets/keys.py:\n" + "\n".join(found)


def test_the_check_catches_what_it_looks_for() -> None:
    assert colour_words('style="bold red on grey15"') == ["red", "grey15"]
    assert colour_words("background: ansi_bright_blue; color: #ff0000") == ["ansi_bright_blue", "#ff0000"]
    assert colour_words("retired, credit, greenlet") == []
