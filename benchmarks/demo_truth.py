"""How often the demo's fake NVML computes a card's state: a story played on a hand-moved clock (as the tests play
it), counting `World.truth()` calls, the states actually computed, and the counters' rate look-ups. Counts, not
time, so they compare on a loaded box; run it under `valgrind --tool=callgrind` for instructions.

    python -m benchmarks.demo_truth [--story straggler] [--ticks 20] [--step 3] [--profile dgx-a100]
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import ParamSpec, TypeVar

from hwtop.demo.machine import demo_sampler
from hwtop.demo.nvml import world
from hwtop.session.session import Session

P = ParamSpec("P")
R = TypeVar("R")


def counting(calls: dict[str, int], key: str, method: Callable[P, R]) -> Callable[P, R]:
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        calls[key] += 1
        return method(*args, **kwargs)
    return wrapper


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--story", default="straggler")
    parser.add_argument("--profile", default="dgx-a100")
    parser.add_argument("--ticks", type=int, default=20)
    parser.add_argument("--step", type=float, default=3.0, help="story seconds between ticks")
    args = parser.parse_args()
    calls = {"truth": 0, "computed": 0, "rate": 0}
    world.World.truth = counting(calls, "truth", world.World.truth)  # type: ignore[method-assign]
    world.World.rate = counting(calls, "rate", world.World.rate)  # type: ignore[method-assign]
    inner = getattr(world.World, "_truth", None)  # a tree from before the memo computes on every call
    if inner is not None:
        setattr(world.World, "_truth", counting(calls, "computed", inner))  # noqa: B010 - private, absent in older trees
    now = [0.0]
    session = Session(demo_sampler(args.profile, args.story, seed=7, clock=lambda: now[0],
                                   wall=lambda: 1_800_000_000.0 + now[0]))
    try:
        for _ in range(args.ticks):
            session.tick()
            now[0] += args.step
    finally:
        session.close()
    if inner is None:
        calls["computed"] = calls["truth"]
    print(f"{args.profile} {args.story}: {args.ticks} ticks every {args.step:g} s: "
          f"truth() {calls['truth']} calls, {calls['computed']} computed; rate {calls['rate']} look-ups")


if __name__ == "__main__":
    main()
