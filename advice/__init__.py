"""Troubleshooting rules over the snapshots: findings that cite their numbers and say what to do (no Textual).

Importing any module of the advice imports the rules first (advice/rules/, each declared with advice/registry.py's
`@rule`), so the one threshold table (advice/thresholds.TABLE) already holds the thresholds rules declare in their
own files when anything reads it: a config file's check, a panel, the docs' tests."""

import hwtop.advice.rules  # noqa: F401
