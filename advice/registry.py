"""Where a rule declares itself: `@rule(...)` over its check gives its id, severity, hold and clear times, what it
watches and the thresholds it reads, in the rule's own file, and may add thresholds of its own to the one table
(advice/thresholds.py) that a config file is checked against. `discover` imports every module of a package, so a
new rule is one new file; other code names a rule by its object (`rank_straggler.id`), never by a string."""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable, Iterator, Mapping
from typing import Literal, NewType

import msgspec

from hwtop.advice.thresholds import TABLE, Threshold, Thresholds
from hwtop.advice.window import Window
from hwtop.model.finding import Finding

RuleId = NewType("RuleId", str)
Severity = Literal["critical", "warning", "info"]  # the most severe finding a rule raises
Check = Callable[[Window, Thresholds], Iterator[Finding]]
LAST = 1000.0  # a rule that gives no order sits after every ordered one, by module and then by definition


class Rule(msgspec.Struct, frozen=True):
    """A registered rule. Calling it runs its check, so a decorated function is still called as before."""

    id: RuleId
    check: Check
    hold_s: float
    clear_s: float
    watches: str
    severity: Severity = "warning"
    reads: tuple[str, ...] = ()  # names in thresholds.TABLE (tests/advice/test_registry.py checks them)
    order: float = LAST  # the pane's "watching" line, doctor and config errors list rules in this order
    module: str = ""  # where it is defined

    def __call__(self, window: Window, thresholds: Thresholds) -> Iterator[Finding]:
        return self.check(window, thresholds)

    def finding(self, severity: str, title: str, evidence: tuple[str, ...], fix: tuple[str, ...], *, scope: str = "",
                gpus: tuple[int, ...] = (), cores: tuple[int, ...] = (), pids: tuple[int, ...] = (), cause: str = "",
                measure: float | None = None) -> Finding:
        """A finding of this rule, with its id: the id is written once, in `@rule(...)`. Its fields are
        `Finding`'s less the id and what the engine fills in (since, covers, held_at)."""
        return Finding(self.id, severity, title, evidence, fix, scope=scope, gpus=gpus, cores=cores, pids=pids,
                       cause=cause, measure=measure)


_REGISTERED: list[Rule] = []


def rule(id: str, *, hold_s: float, clear_s: float, watches: str, severity: Severity = "warning",
         reads: tuple[str, ...] = (), thresholds: Mapping[str, Threshold] | None = None,
         order: float = LAST) -> Callable[[Check], Rule]:
    """Registers the check it decorates. `thresholds` are this rule's own, added to the shared table; a name
    already there is refused (one meaning per name)."""

    def register(check: Check) -> Rule:
        for name, entry in (thresholds or {}).items():
            if name in TABLE and TABLE[name] != entry:
                raise ValueError(f"threshold {name!r} of rule {id!r} is already declared")
            TABLE[name] = entry
        if any(r.id == id for r in _REGISTERED):
            raise ValueError(f"rule {id!r} is registered twice")
        declared = Rule(RuleId(id), check, hold_s, clear_s, watches, severity,
                        tuple(dict.fromkeys((*reads, *(thresholds or {})))), order, check.__module__)
        _REGISTERED.append(declared)
        return declared

    return register


def discover(package: str) -> tuple[Rule, ...]:
    """Every rule defined in `package`'s modules, by `order`, then module name, then definition order."""
    root = importlib.import_module(package)
    for info in pkgutil.iter_modules(root.__path__, f"{package}."):
        importlib.import_module(info.name)
    mine = [(r.order, r.module, n, r) for n, r in enumerate(_REGISTERED) if r.module.startswith(f"{package}.")]
    return tuple(r for *_, r in sorted(mine, key=lambda k: k[:3]))
