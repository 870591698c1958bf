"""Test-only helpers live beside the tests; this package lets benchmarks reuse them (`tests.factories`)."""
