"""Troubleshooting rules over the snapshots: findings that cite their numbers and say what to do (no Textual)."""
