"""hwtop: what limits a PyTorch training job, in one terminal screen.

The repository's top-level folders (`probes/`, `tui/`, `widgets/`, `model/`, …) install as sub-packages of
this one name (`hwtop.probes`, `hwtop.tui`, …): see `[tool.setuptools.package-dir]` in pyproject.toml.
"""

__version__ = "0.2.0"
