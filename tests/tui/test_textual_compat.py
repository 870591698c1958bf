"""Every private Textual name hwtop uses lives in tui/textual_compat.py: each one is checked against the Textual
installed (a release that moves or renames one fails here, not on a user's terminal), and no other module of the
product or its tests uses one, nor gives a Textual subclass an attribute that Textual's own classes use."""

from __future__ import annotations

import ast
import importlib
import inspect
import re
from pathlib import Path

import pytest
from textual.app import App, ComposeResult
from textual.drivers.linux_driver import LinuxDriver
from textual.strip import Strip
from textual.widgets import Static

from hwtop.tui import textual_compat

ROOT = Path(__file__).resolve().parents[2]
ADAPTER = ROOT / "tui" / "textual_compat.py"
PRIVATE = {"_handle_exception", "_sigcont_application", "_filters", "_compositor", "_debug",
           textual_compat.PARSER_DEADLINE, textual_compat.SUSPENDED_FLAG, textual_compat.AUTO_RESTART_FLAG}
SOURCES = ("tui", "widgets", "tests", "benchmarks", "screenshots", "cli", "session", "demo")


def test_the_parser_and_its_clock_are_where_the_adapter_imports_them() -> None:
    assert issubclass(textual_compat.ParseError, Exception)
    assert isinstance(textual_compat.get_time(), float)
    parser = textual_compat.XTermParser(False)
    assert textual_compat.parser_deadline(parser) is None  # nothing held
    list(parser.feed("\x1b"))  # a lone Escape: held until its deadline
    deadline = textual_compat.parser_deadline(parser)
    assert isinstance(deadline, float) and 0 < deadline - textual_compat.get_time() <= 1


def test_the_hooks_override_methods_textual_still_has() -> None:
    for owner, name in ((App, "_handle_exception"), (LinuxDriver, "_sigcont_application")):
        method = vars(owner).get(name)
        assert callable(method), f"{owner.__name__}.{name} moved"
        assert list(inspect.signature(method).parameters)[0] == "self"
    assert list(inspect.signature(App._handle_exception).parameters) == ["self", "error"]


async def test_the_attributes_the_adapter_reads_are_on_textual_objects() -> None:
    app = App()
    assert isinstance(textual_compat.line_filters(app), list)
    driver = textual_compat.SigcontHookDriver(app, debug=False, mouse=True, size=(80, 24))
    assert driver.suspended_by_sigtstp is False and driver.parser_debug is False
    assert isinstance(getattr(driver, textual_compat.AUTO_RESTART_FLAG), bool)


class _Text(App[None]):
    def compose(self) -> ComposeResult:
        yield Static("hwtop")


async def test_the_screen_is_read_as_textual_draws_it() -> None:
    async with _Text().run_test(size=(20, 3)) as pilot:
        await pilot.pause()
        strips = textual_compat.screen_strips(pilot.app.screen)
        assert len(strips) == 3 and all(isinstance(strip, Strip) for strip in strips)
        assert strips[0].text.startswith("hwtop")


def test_a_crash_reaches_the_public_hook() -> None:
    seen: list[Exception] = []

    class Hooked(textual_compat.ExceptionHookApp[None]):
        def unhandled_exception(self, error: Exception) -> None:
            seen.append(error)

    Hooked()._handle_exception(ValueError("boom"))
    assert [str(error) for error in seen] == ["boom"]


def private_uses(source: str) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.module and re.match(r"textual(\.\w+)*\._", node.module):
            found.append(f"from {node.module} (line {node.lineno})")
        elif isinstance(node, ast.Import):
            found += [f"import {a.name} (line {node.lineno})" for a in node.names
                      if re.match(r"textual(\.\w+)*\._", a.name)]
        elif isinstance(node, ast.Attribute) and node.attr in PRIVATE:
            found.append(f".{node.attr} (line {node.lineno})")
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name in PRIVATE:
            found.append(f"def {node.name} (line {node.lineno})")
        elif isinstance(node, ast.Constant) and node.value in PRIVATE:
            found.append(f"{node.value!r} (line {node.lineno})")
    return found


def test_the_scan_sees_each_kind_of_use() -> None:
    source = ("from textual._time import get_time\nimport textual._xterm_parser\napp._filters.append(f)\n"
              "def _handle_exception(self, error): ...\ngetattr(d, '_must_signal_resume')\n"
              "from textual.app import App\n")
    assert sorted(use.split(" (")[0] for use in private_uses(source)) == [
        "'_must_signal_resume'", "._filters", "def _handle_exception", "from textual._time",
        "import textual._xterm_parser"]


@pytest.mark.slow  # over the fast suite's minute on two cores (--durations)
def test_no_module_but_the_adapter_uses_a_private_textual_name() -> None:
    offenders = {}
    for room in SOURCES:
        for path in (ROOT / room).rglob("*.py"):
            if path != ADAPTER and path != Path(__file__).resolve() and "__snapshots__" not in path.parts:
                if found := private_uses(path.read_text(encoding="utf-8")):
                    offenders[str(path.relative_to(ROOT))] = found
    assert offenders == {}


def textual_privates(cls: type) -> set[str]:
    """The underscored names Textual's own classes in `cls`'s bases define or set on themselves."""
    names: set[str] = set()
    for base in cls.__mro__[1:]:
        if base.__module__.startswith("textual"):
            source = inspect.getsource(inspect.getmodule(base) or base)
            names |= set(re.findall(r"self\.(_[a-z]\w*)\b", source)) | {n for n in vars(base) if n.startswith("_")}
    return {name for name in names if not name.startswith("__")}


@pytest.mark.parametrize("room", ["tui", "widgets"])
@pytest.mark.slow  # over the fast suite's minute on two cores (--durations)
def test_no_textual_subclass_touches_a_textual_private_but_through_the_adapter(room: str) -> None:
    """A widget that sets `self._cache` where Widget keeps its own `_cache` breaks Textual quietly: every
    underscored name an hwtop subclass defines or reads is its own, not one of its Textual bases'."""
    clashes = {}
    for path in sorted((ROOT / room).glob("*.py")):
        if path == ADAPTER:
            continue
        module = importlib.import_module(f"hwtop.{room}.{path.stem}")
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            cls = getattr(module, node.name, None) if isinstance(node, ast.ClassDef) else None
            if not isinstance(cls, type) or not any(b.__module__.startswith("textual") for b in cls.__mro__[1:]):
                continue
            own = {n.attr for n in ast.walk(node)
                   if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id == "self"}
            own |= {n.name for n in node.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)}
            own = {name for name in own if name.startswith("_") and not name.startswith("__")}
            adapter_made = {n for n in vars(textual_compat).values() if isinstance(n, type)}
            inherited = textual_privates(cls) - {n for c in adapter_made for n in vars(c)}
            if clash := sorted(own & inherited):
                clashes[f"{room}/{path.name}:{node.name}"] = clash
    assert clashes == {}
