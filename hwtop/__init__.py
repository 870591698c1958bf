"""hwtop: what limits a PyTorch training job, in one terminal screen.

The repository's top-level folders (`probes/`, `tui/`, `widgets/`, `model/`, …) are this package's sub-packages
(`hwtop.probes`, `hwtop.tui`, …) through one link each under `hwtop/` (`hwtop/tui -> ../tui`); setuptools finds
them through the links (`[tool.setuptools.packages.find]` in pyproject.toml). Import them only as `hwtop.<room>`.
"""

__version__ = "0.2.0"
