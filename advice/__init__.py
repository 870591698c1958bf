"""Troubleshooting rules over the snapshots: findings that cite their numbers and say what to do (no Textual).

The rules (advice/rules/, each declared with advice/registry.py's `@rule`) are imported with the engine, not with
the package: the panels' judgements (advice/judge.py) and the threshold table they read are the monitor's first
frame, the rules are not. A rule's own thresholds stay on the rule, which hands them to its check; the table of
every threshold (advice.rules.THRESHOLDS) is built from the rules found, wherever it is wanted."""
