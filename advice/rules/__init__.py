"""The rules: each module here declares its rules with `@rule` (advice/registry.py) and is found by walking this
package, so a new rule is one new file. RULES is in each rule's `order`: the pane's "watching" line, doctor and
the config file's errors list them so."""

from __future__ import annotations

from hwtop.advice.registry import Rule, RuleId, discover

RULES: tuple[Rule, ...] = discover(__name__)
RULE_IDS: tuple[RuleId, ...] = tuple(rule.id for rule in RULES)

__all__ = ["RULES", "RULE_IDS", "Rule", "RuleId"]
