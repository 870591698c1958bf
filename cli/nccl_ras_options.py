"""`--nccl-ras HOST:PORT`, `--nccl-ras-interval SECONDS` and `--nccl-ras-poll`: where and how often hwtop asks a focused
job's NCCL RAS service. Kept out of cli/main.py, which only calls these two functions: without the options, a job
whose processes map libnccl is asked at its ranks' NCCL_RAS_ADDR (else localhost:28028) every 10 s."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from hwtop.probes.nccl_ras.manners import DEFAULT_INTERVAL_S, MIN_INTERVAL_S

if TYPE_CHECKING:
    from hwtop.session.sources import NcclRas


def ras_address(text: str) -> object:
    from hwtop.probes.nccl_ras.client import parse_address

    try:
        return parse_address(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def ras_interval(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not value >= MIN_INTERVAL_S or value == float("inf"):
        raise argparse.ArgumentTypeError(f"at least {MIN_INTERVAL_S:g} s between NCCL RAS queries (NCCL issue "
                                         f"#1718: polling hurts the job), got {text!r}")
    return value


def add_nccl_ras_options(parser: argparse.ArgumentParser, sub: bool = False) -> None:
    parser.add_argument("--nccl-ras", metavar="HOST:PORT", type=ras_address,
                        default=argparse.SUPPRESS if sub else None,
                        help="ask the focused job's NCCL RAS service here (default: its ranks' NCCL_RAS_ADDR, else "
                             "localhost:28028, once a process of the job maps libnccl)")
    parser.add_argument("--nccl-ras-interval", metavar="SECONDS", type=ras_interval,
                        default=argparse.SUPPRESS if sub else DEFAULT_INTERVAL_S,
                        help=f"seconds between NCCL RAS queries (default {DEFAULT_INTERVAL_S:g}, at least "
                             f"{MIN_INTERVAL_S:g})")
    parser.add_argument("--nccl-ras-poll", action="store_true", default=argparse.SUPPRESS if sub else False,
                        help="ask every interval whatever the job's NCCL release: by default a release whose STATUS "
                             "can crash the job (NCCL issues #1669, #1762, #2346; before 2.28.7) or an unknown one is "
                             "asked only when the job stops, twice a stop")


def nccl_ras_config(args: argparse.Namespace) -> NcclRas:
    """What the options say, for the session's SourceConfig."""
    from hwtop.session.sources import NcclRas

    return NcclRas(getattr(args, "nccl_ras", None), getattr(args, "nccl_ras_interval", DEFAULT_INTERVAL_S),
                   getattr(args, "nccl_ras_poll", False))
