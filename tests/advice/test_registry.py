"""A rule is one file: what it declares with @rule is checked against what it does (the thresholds its check
reaches, the ids and severities of the findings it raises), every rule is documented and has a test of its own,
and a new module in the rules' package is found with no edit elsewhere."""

from __future__ import annotations

import ast
import importlib
import inspect
import pathlib
import pkgutil
import sys
import textwrap
import types
from functools import cache

import grimp
import pytest

from hwtop.advice import registry, thresholds
from hwtop.advice.rules import RULE_IDS, RULES, THRESHOLDS, Rule
from hwtop.advice.rules.memory import cuda_oom
from hwtop.advice.rules.pipeline import gpu_starved
from hwtop.advice.thresholds import Thresholds
from hwtop.advice.window import Window
from hwtop.model.finding import SEVERITIES, Finding
from hwtop.model.workload import OomEvent
from tests.advice_timeline import Timeline, rank, workload

ROOT = pathlib.Path(__file__).resolve().parents[2]
MINE = {"test_registry.py", "test_engine.py"}  # tests of the registry and engine name every rule: not a rule's test


def _reads(function: types.FunctionType, seen: set[object]) -> set[str]:
    """The threshold names `function` reads as t["name"], and those of the advice functions it names, transitively."""
    if function in seen:
        return set()
    seen.add(function)
    tree = ast.parse(textwrap.dedent(inspect.getsource(function)))
    scope = dict(function.__globals__)
    for node in ast.walk(tree):  # imports inside the function (the rules import advice.ranks late)
        if isinstance(node, ast.ImportFrom) and node.module:
            module = importlib.import_module(node.module)
            scope.update({a.asname or a.name: getattr(module, a.name, None) for a in node.names})
    names: set[str] = set()
    for node in ast.walk(tree):
        if (isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) and node.value.id == "t"
                and isinstance(node.slice, ast.Constant) and isinstance(node.slice.value, str)):
            names.add(node.slice.value)
        elif isinstance(node, ast.Name):
            found = scope.get(node.id)
            found = found.check if isinstance(found, Rule) else found
            if isinstance(found, types.FunctionType) and found.__module__.startswith("hwtop.advice"):
                names |= _reads(found, seen)
    return names


@pytest.mark.parametrize("rule", RULES, ids=RULE_IDS)
@pytest.mark.slow  # over the fast suite's minute on two cores (--durations)
def test_a_rule_declares_every_threshold_its_check_reads(rule: Rule) -> None:
    assert isinstance(rule.check, types.FunctionType)
    assert _reads(rule.check, set()) <= set(rule.reads)
    assert set(rule.reads) <= {*thresholds.TABLE, *rule.thresholds}


def _raised(module: str) -> list[tuple[str, str | None]]:
    """(id, severity or None when computed) of every finding built in `module`: `some_rule.finding(severity, …)`,
    whose id is that rule's."""
    loaded = importlib.import_module(module)
    out = []
    for node in ast.walk(ast.parse(inspect.getsource(loaded))):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "finding"
                and isinstance(node.func.value, ast.Name)):
            owner = getattr(loaded, node.func.value.id, None)
            assert isinstance(owner, Rule), f"{module}:{node.lineno}: {node.func.value.id} is not a rule"
            severity = node.args[0] if node.args else None
            literal = [c.value for c in ast.walk(severity) if isinstance(c, ast.Constant)] if severity else []
            out += [(owner.id, s) for s in literal if s in SEVERITIES] or [(owner.id, None)]
    return out


def test_the_rules_raise_their_own_ids_at_most_at_their_declared_severity() -> None:
    """The mirror of the registry is the code itself: the rules whose findings a module builds are its own."""
    raised: set[str] = set()
    for module in {rule.module for rule in RULES}:
        declared = {rule.id: rule.severity for rule in RULES if rule.module == module}
        for id, severity in _raised(module):
            assert id in declared, f"{module} raises {id!r}, which no rule of it declares"
            if severity is not None:
                assert SEVERITIES.index(severity) >= SEVERITIES.index(declared[id]), (id, severity)
            raised.add(id)
    assert raised == set(RULE_IDS)
    assert len(set(RULE_IDS)) == len(RULE_IDS)


def literal_id_findings(path: pathlib.Path, rules: bool) -> list[int]:
    """Lines of each Finding(...) in `path` built with a string constant for its id (the id spelled a second time:
    the rule's object builds it, `rule.finding(...)`); in a rules module (`rules`), of every Finding(...)."""
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not (isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", "")) == "Finding"):
            continue
        ids = [*node.args[:1], *(k.value for k in node.keywords if k.arg == "id")]
        if rules or any(isinstance(id, ast.Constant) for id in ids):
            out.append(node.lineno)
    return out


@pytest.mark.slow  # over the fast suite's minute on two cores (--durations)
def test_no_finding_is_built_with_a_literal_id() -> None:
    files = sorted({*_product_files(), *(ROOT / "advice").rglob("*.py")})
    assert any(path.parent.name == "rules" for path in files)
    rules = ROOT / "advice" / "rules"
    spelled = {str(path.relative_to(ROOT)): found for path in files
               if (found := literal_id_findings(path, rules in path.parents))}
    assert not spelled, f"findings built with their id spelled (use the rule's own: `rule.finding(...)`): {spelled}"


def test_the_literal_id_check_finds_one(tmp_path) -> None:
    module = tmp_path / "view.py"
    module.write_text('from hwtop.model.finding import Finding\nfrom hwtop.model import finding\n'
                      'a = Finding("gpu-starved", "warning", "t", (), ())\n'
                      'b = finding.Finding(id="gpu-starved", severity="warning", title="t", evidence=(), fix=())\n'
                      'c = Finding(change.id, "warning", "t", (), ())\n')
    assert literal_id_findings(module, rules=False) == [3, 4]
    assert literal_id_findings(module, rules=True) == [3, 4, 5]


def test_a_rules_findings_carry_its_registered_id() -> None:
    """Every rule run over a window where some raise: each finding it yields has its id, whichever helper built it."""
    t = Timeline()
    job = workload(rank(0, wait=0.8), oom=OomEvent(rank=0, batch_size=8, time=t.time + 1))
    window = Window(tuple(t.tick(workload=job) for _ in range(12)))
    raised = {rule.id: {f.id for f in rule(window, Thresholds())} for rule in RULES}
    assert {id for id, found in raised.items() if found} >= {gpu_starved.id, cuda_oom.id}
    assert all(found <= {id} for id, found in raised.items()), raised


def test_a_rules_finding_takes_every_field_of_a_finding_but_those_the_engine_fills() -> None:
    """Rule.finding spells Finding's fields again (typed, where a **kwargs would not be): a field added to Finding
    is one it must take too."""
    taken = set(inspect.signature(Rule.finding).parameters) - {"self"}
    assert taken == set(Finding.__struct_fields__) - {"id", "since", "covers", "held_at"}


def test_the_rules_package_holds_rules_only_and_no_rule_imports_another() -> None:
    """What rules share lives beside their package (advice/job_facts.py, data_wait.py, job_memory.py …): a rule module
    that imports another's helpers loads that module and its rules with them, and ties two files together."""
    import hwtop.advice.rules as package

    modules = {info.name for info in pkgutil.iter_modules(package.__path__, f"{package.__name__}.")}
    assert modules == {rule.module for rule in RULES}, "a module of the rules' package that declares no rule"
    graph = grimp.build_graph("hwtop", cache_dir=None)
    imported = {module: graph.find_modules_directly_imported_by(module) & {package.__name__, *modules}
                for module in modules}
    assert not {module: found for module, found in imported.items() if found}


@cache
def _documents() -> str:
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").glob("**/*.md"))]
    return "\n".join(page.read_text(encoding="utf-8") for page in pages if page.is_file())


@pytest.mark.parametrize("id", RULE_IDS)
def test_every_rule_is_documented(id: str) -> None:
    assert f"`{id}`" in _documents() or id in _documents(), f"{id} is in neither README.md nor docs/"


@cache
def _tests_naming() -> dict[str, set[str]]:
    """Each test function of tests/advice (this file and the engine's aside) → the strings and names in it (read
    once: the files do not change during a run)."""
    out: dict[str, set[str]] = {}
    for path in sorted((ROOT / "tests" / "advice").glob("test_*.py")):
        if path.name in MINE:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name.startswith("test"):
                words = {n.value for n in ast.walk(node) if isinstance(n, ast.Constant) and isinstance(n.value, str)}
                words |= {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}
                out[f"{path.name}::{node.name}"] = {w for word in words for w in (word, *word.split())}
    return out


@pytest.mark.parametrize("rule", RULES, ids=RULE_IDS)
def test_every_rule_has_a_test_of_its_own(rule: Rule) -> None:
    name = rule.check.__name__
    assert any(rule.id in words or name in words for words in _tests_naming().values()), \
        f"no test in tests/advice names {rule.id} (or calls {name})"


def test_a_new_module_in_the_package_registers_itself_with_its_thresholds(tmp_path, monkeypatch) -> None:
    """Discovery over a package of one file: its rule is found, its threshold is the rule's own (in the table built
    from the rules, never added to the shared one) and its check reads it, default or overridden."""
    package = tmp_path / "extra_rules"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "stuck.py").write_text(textwrap.dedent('''
        from hwtop.advice.registry import rule
        from hwtop.advice.thresholds import Threshold

        @rule("stuck-worker", hold_s=1, clear_s=2, watches="workers", reads=("data_wait_fraction",),
              thresholds={"stuck_worker_s": Threshold(30.0, "s", "a test's choice")})
        def stuck(window, t):
            if t["stuck_worker_s"] < 10:
                yield stuck.finding("warning", "stuck", ("e",), ("f",))
        '''))
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(registry, "_REGISTERED", [])
    shared = dict(thresholds.TABLE)
    try:
        (found,) = registry.discover("extra_rules")
    finally:
        for name in ("extra_rules", "extra_rules.stuck"):
            sys.modules.pop(name, None)
    assert (found.id, found.reads, found.module) == ("stuck-worker", ("data_wait_fraction", "stuck_worker_s"),
                                                      "extra_rules.stuck")
    assert dict(thresholds.TABLE) == shared and registry._REGISTERED == [found]
    assert list(registry.table((found,))) == [*shared, "stuck_worker_s"]
    assert [f.id for f in found(None, Thresholds({"stuck_worker_s": 5}))] == ["stuck-worker"]  # type: ignore[arg-type]
    assert not list(found(None, Thresholds()))  # type: ignore[arg-type]


def test_a_threshold_declared_twice_with_two_meanings_is_refused(monkeypatch) -> None:
    monkeypatch.setattr(registry, "_REGISTERED", [])
    with pytest.raises(ValueError, match="'spin_seconds' of rule 'x' is already declared"):
        registry.rule("x", hold_s=0, clear_s=0, watches="x",
                      thresholds={"spin_seconds": thresholds.Threshold(1.0, "s", "another meaning")})(
            lambda window, t: iter(()))
    mine = {"stuck_s": thresholds.Threshold(1.0, "s", "one meaning")}
    first = registry.rule("x", hold_s=0, clear_s=0, watches="x", thresholds=mine)(lambda window, t: iter(()))
    other = registry.rule("y", hold_s=0, clear_s=0, watches="y",
                          thresholds={"stuck_s": thresholds.Threshold(2.0, "s", "another")})(lambda window, t: iter(()))
    assert registry.table((first,))["stuck_s"] == mine["stuck_s"]
    with pytest.raises(ValueError, match="'stuck_s' of rule 'y' is already declared"):
        registry.table((first, other))


def test_the_rules_own_thresholds_stay_theirs_and_the_shared_table_is_read_only() -> None:
    """Importing every rule adds nothing to the shared table; the table of every name is built from the rules, and
    a check is handed its rule's defaults, which a user's override still beats."""
    assert "scale_drops" not in thresholds.TABLE and THRESHOLDS["scale_drops"].value == 3
    assert set(THRESHOLDS) == {*thresholds.TABLE, *(name for rule in RULES for name in rule.thresholds)}
    with pytest.raises(TypeError):
        thresholds.TABLE["scale_drops"] = THRESHOLDS["scale_drops"]  # type: ignore[index]
    assert Thresholds().over(THRESHOLDS)["scale_drops"] == 3
    assert Thresholds({"scale_drops": 5}).over(THRESHOLDS)["scale_drops"] == 5
    with pytest.raises(KeyError):
        Thresholds()["scale_drops"]  # outside its rule, a rule's own name is not the panels' to read


def _product_files() -> list[pathlib.Path]:
    """Every Python file of the product outside advice/ (the tests, the benchmarks and the hwtop/ shim aside): its
    rooms (packages) and scripts/, never what an install or a virtual environment left beside them (`pip install .`
    writes build/, a copy of advice/ among it)."""
    aside = {"tests", "advice", "benchmarks", "hwtop"}
    rooms = [room for room in ROOT.iterdir() if room.name not in aside
             and ((room / "__init__.py").is_file() or room.name == "scripts")]
    return sorted(path for room in rooms for path in room.rglob("*.py"))


def rule_id_strings(path: pathlib.Path) -> list[tuple[int, str]]:
    """(line, id) of each string constant in `path` that is a rule id: a match on it outside advice/ would bind
    that code to the id's spelling (the rule's own object says `rule.id`)."""
    ids = set(RULE_IDS)
    return [(node.lineno, node.value) for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.strip() in ids]


@pytest.mark.slow  # over the fast suite's minute on two cores (--durations)
def test_no_rule_id_is_spelled_outside_advice() -> None:
    files = _product_files()
    assert len(files) > 100 and any(path.parent.name == "tui" for path in files)  # the rooms were found at all
    spelled = {str(path.relative_to(ROOT)): found for path in files if (found := rule_id_strings(path))}
    assert not spelled, f"rule ids spelled outside advice/ (use the rule's object: `rank_straggler.id`): {spelled}"


def test_the_spelling_check_finds_a_spelled_id(tmp_path) -> None:
    module = tmp_path / "view.py"
    module.write_text('def straggler(findings):\n    return [f for f in findings if f.id == "rank-straggler"]\n')
    assert rule_id_strings(module) == [(2, "rank-straggler")]
