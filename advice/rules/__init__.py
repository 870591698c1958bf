"""The rules: each module here declares its rules with `@rule` (advice/registry.py) and is found by walking this
package, so a new rule is one new file. A module here declares rules and imports no other module here: what rules
share lives beside the package (advice/job_facts.py, data_wait.py, job_memory.py, supply.py, throttle.py). RULES
is in each rule's `order`: the pane's "watching" line, doctor and the config file's errors list them so.
THRESHOLDS is every threshold they read, the shared table's and their own: what a config file may set."""

from __future__ import annotations

from collections.abc import Mapping

from hwtop.advice.registry import Rule, RuleId, discover, table
from hwtop.advice.thresholds import Threshold

RULES: tuple[Rule, ...] = discover(__name__)
RULE_IDS: tuple[RuleId, ...] = tuple(rule.id for rule in RULES)
THRESHOLDS: Mapping[str, Threshold] = table(RULES)

__all__ = ["RULES", "RULE_IDS", "THRESHOLDS", "Rule", "RuleId"]
