"""No import cycle among the modules inside a package: a module that imports one that imports it back loads half
made (whichever is imported first sees the other unfinished), and the two can only be read, tested and changed
together. The graph is grimp's, the one import-linter checks the layers on (every import, those inside functions
and under TYPE_CHECKING too). CHECKED is the list of packages held to it; the others are to join as their cycles
go."""

from __future__ import annotations

import graphlib
from functools import cache

import grimp
import pytest

CHECKED = ("hwtop.advice", "hwtop.demo", "hwtop.session")


@cache
def _graph() -> grimp.ImportGraph:
    return grimp.build_graph("hwtop", cache_dir=None)


def cycle_in(graph: grimp.ImportGraph, package: str) -> tuple[str, ...]:
    """One cycle of imports among `package` and the modules inside it, as the modules in order with the first again
    at the end; () when there is none."""
    inside = {package, *graph.find_descendants(package)}
    imports = {module: graph.find_modules_directly_imported_by(module) & inside for module in inside}
    try:
        graphlib.TopologicalSorter(imports).prepare()
    except graphlib.CycleError as error:
        return tuple(reversed(error.args[1]))
    return ()


@pytest.mark.parametrize("package", CHECKED)
def test_no_import_cycle_inside_the_package(package: str) -> None:
    cycle = cycle_in(_graph(), package)
    assert not cycle, f"an import cycle inside {package}: {' -> '.join(cycle)}"


def test_the_check_finds_a_cycle() -> None:
    graph = grimp.ImportGraph()
    for module in ("pkg", "pkg.a", "pkg.b", "pkg.c", "other"):
        graph.add_module(module)
    graph.add_import(importer="pkg.a", imported="pkg.b")
    graph.add_import(importer="pkg.b", imported="pkg.c")
    graph.add_import(importer="pkg.c", imported="other")
    graph.add_import(importer="other", imported="pkg.a")  # through a module outside: not a cycle inside pkg
    assert cycle_in(graph, "pkg") == ()
    graph.add_import(importer="pkg.c", imported="pkg.a")
    cycle = cycle_in(graph, "pkg")
    assert set(cycle) == {"pkg.a", "pkg.b", "pkg.c"} and cycle[0] == cycle[-1] and len(cycle) == 4
