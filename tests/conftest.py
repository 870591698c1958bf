"""Shared pytest configuration: the `slow` mark (torch runs, tmux, Prometheus) is declared in pyproject.toml."""
