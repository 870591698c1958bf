"""The scenarios of tests/fixtures/nccl-ras/README.md as the stand-in's communicators: the same job that NCCL's own
formatting code was given, so the stand-in's answer can be held to NCCL's byte for byte, and the parsers' and the
watch's tests can use either."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from tests.nccl_ras_standin import StandComm, StandRank

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "nccl-ras"
VERSIONS = ("2.24.3", "2.27.5", "2.28.7", "2.30.7")
WORLD = 0x27A079B828FF1A75


def _rank(i: int, per_node: int, counts: dict[str, int], pid: int | None = None, **kw: object) -> StandRank:
    return StandRank(i, f"10.0.0.{1 + i // per_node}", 4000 + i if pid is None else pid, i % per_node, counts,
                     **kw)  # type: ignore[arg-type]


def _comm(members: range | tuple[int, ...], per_node: int, counts: Callable[[int], dict[str, int]],
          h: int = WORLD, host_hash: int = 0x5D1F, pid_hash: int = 0x9E37, **flags: Callable[[int], dict]) -> StandComm:
    """`members`: the global ranks of the communicator, in its rank order."""
    ranks = []
    for r, g in enumerate(members):
        extra = {k: v for f in flags.values() for k, v in f(r).items()}
        rank = _rank(g, per_node, counts(r), **extra)
        rank.rank = r
        ranks.append(rank)
    return StandComm(h, ranks, host_hash, pid_hash)


def steady(allreduce: int, broadcast: int = 1) -> Callable[[int], dict[str, int]]:
    return lambda r: {"Broadcast": broadcast, "AllReduce": allreduce}


def healthy() -> list[StandComm]:
    return [_comm(range(8), 4, steady(6650))]


def hang() -> list[StandComm]:
    return [_comm(range(8), 4, lambda r: steady(6649 if r == 5 else 6650)(r))]


def many() -> list[StandComm]:
    return [_comm(range(64), 8, lambda r: steady(6648 if r == 40 else 6649 if 16 <= r < 30 else 6650)(r))]


def _lost_flags(r: int) -> dict:
    return {"missing": True, "dead": True} if r == 6 else {"missing": True} if r == 9 else {}


def lost() -> list[StandComm]:
    return [_comm(range(16), 4, steady(120), flags=_lost_flags)]


def lost2() -> list[StandComm]:
    comms = lost()
    for g in range(4):
        gone = 2 if g == 1 else 1 if g == 2 else -1
        comm = _comm(range(4 * g, 4 * g + 4), 4, steady(500 + g), 0x3000 + g, 0x5D1F + g, 0xC000 + g)
        if gone >= 0:
            comm.ranks[gone].missing = True
            comm.ranks[gone].dead = 4 * g + gone == 6
        comms.append(comm)
    return comms


def nocomm() -> list[StandComm]:
    return [_comm(range(8), 4, steady(300), flags=lambda r: {"missing": True, "nocomm": True} if r == 3 else {})]


def notfound() -> list[StandComm]:
    return [_comm(range(8), 4, lambda r: steady(41 if r == 2 else 42)(r),
                  flags=lambda r: {"unknown": True} if r == 2 else {})]


def pod() -> list[StandComm]:
    return [_comm(range(8), 4, lambda r: steady(811 if r == 6 else 812)(r), flags=lambda r: {"pid": 17 + r % 4})]


def tp() -> list[StandComm]:
    comms = [_comm(range(16), 8, lambda r: {"Broadcast": 2, "AllReduce": 3})]
    comms += [_comm(range(8 * g, 8 * g + 8), 8, lambda r: {"AllReduce": 90412, "AllGather": 1200}, 0x1000 + g,
                    0x5D1F + g, 0xA000 + 8 * g) for g in range(2)]
    comms += [_comm((g, g + 8), 8, lambda r: {"AllReduce": 5150, "ReduceScatter": 5150}, 0x2000 + g, 0x5D1F,
                    0xB000 + g) for g in range(8)]
    return comms


def twins() -> list[StandComm]:
    return [_comm(range(4), 4, steady(70), 0xC0FFEE, 0x5D1F, 0x1111),
            _comm(range(4, 8), 4, lambda r: steady(69 if r == 1 else 70)(r), 0xC0FFEE, 0x5D20, 0x2222)]


def init() -> list[StandComm]:
    return [_comm(range(8), 4, steady(0, 0), flags=lambda r: {"init_state": 7} if r in (2, 3, 7) else {})]


def errors() -> list[StandComm]:
    def flags(r: int) -> dict:
        return ({"async_error": 6} if r == 4 else {"destroy": True, "abort": True} if r == 1 else
                {"async_error": 2} if r in (5, 6) else {})

    return [_comm(range(8), 4, steady(77), flags=flags)]


SCENARIOS: dict[str, Callable[[], list[StandComm]]] = {
    "healthy": healthy, "hang": hang, "many": many, "lost": lost, "lost2": lost2, "nocomm": nocomm,
    "notfound": notfound, "pod": pod, "tp": tp, "twins": twins, "init": init, "errors": errors}


def fixture(version: str, name: str) -> str:
    return (FIXTURES / version / name).read_text()
