"""Where a rule declares itself: `@rule(...)` over its check gives its id, severity, hold and clear times, what it
watches and the thresholds it reads, in the rule's own file, and may declare thresholds of its own, kept on the rule
(`table` joins them to advice/thresholds.py's for a config file to be checked against). `discover` imports every
module of a package, so a new rule is one new file; other code names a rule by its object (`rank_straggler.id`),
never by a string, and a rule's findings are built by the rule (`rule.finding(...)`), its id written once."""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable, Iterator, Mapping
from types import MappingProxyType
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
    reads: tuple[str, ...] = ()  # names in thresholds.TABLE or its own (tests/advice/test_registry.py checks them)
    order: float = LAST  # the pane's "watching" line, doctor and config errors list rules in this order
    module: str = ""  # where it is defined
    thresholds: Mapping[str, Threshold] = msgspec.field(default_factory=dict)  # its own, beside thresholds.TABLE

    def __call__(self, window: Window, thresholds: Thresholds) -> Iterator[Finding]:
        """Runs its check with its own thresholds' defaults beside the table's."""
        return self.check(window, thresholds.over(self.thresholds) if self.thresholds else thresholds)

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
    """Registers the check it decorates. `thresholds` are this rule's own, kept on the rule; a name the shared table
    declares is refused (one meaning per name), as is one another rule declares (`table`)."""

    def register(check: Check) -> Rule:
        own = dict(thresholds or {})
        clash = [name for name, entry in own.items() if TABLE.get(name, entry) != entry]
        if clash:
            raise ValueError(f"threshold {clash[0]!r} of rule {id!r} is already declared")
        if any(r.id == id for r in _REGISTERED):
            raise ValueError(f"rule {id!r} is registered twice")
        declared = Rule(RuleId(id), check, hold_s, clear_s, watches, severity, tuple(dict.fromkeys((*reads, *own))),
                        order, check.__module__, own)
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


def table(rules: tuple[Rule, ...]) -> Mapping[str, Threshold]:
    """Every threshold `rules` read: the shared table's, then each rule's own, by module (as they were found). A name
    two rules declare with two meanings is refused."""
    out = dict(TABLE)
    for found in sorted(rules, key=lambda r: r.module):
        for name, entry in found.thresholds.items():
            if out.setdefault(name, entry) != entry:
                raise ValueError(f"threshold {name!r} of rule {found.id!r} is already declared")
    return MappingProxyType(out)
