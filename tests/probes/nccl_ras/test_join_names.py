"""A host has one name: the RAS ranks at one of this node's addresses carry this node's hostname beside that address
(probes/nccl_ras/join.py named), and the findings' words name them so (advice/nccl_ranks.py who); another node,
known by its address alone, keeps it."""

from __future__ import annotations

from hwtop.advice.nccl_ranks import who
from hwtop.model.ras import NcclComm, NcclView, RasComm, RasRank
from hwtop.probes.nccl_ras.join import named


def view() -> NcclView:
    ranks = tuple(RasRank(i, "10.0.0.1" if i < 2 else "10.0.0.2", 100 + i, i % 2, i % 2) for i in range(4))
    return NcclView("10.0.0.1:28028", "test", (NcclComm(RasComm("0x1", 4, ranks), 0.0, 0.0, 1, 1),), 1, 0.0)


def test_this_node_s_ranks_are_named_by_its_hostname_beside_their_address() -> None:
    shown = named(view(), frozenset({"10.0.0.1", "127.0.0.1"}), "dgx-a100-demo")
    ranks = shown.comms[0].comm.ranks
    assert [r.name for r in ranks] == ["dgx-a100-demo", "dgx-a100-demo", None, None]
    assert who(ranks[1]) == "rank 1 (pid 101 on dgx-a100-demo at 10.0.0.1, GPU 1)"
    assert who(ranks[2]) == "rank 2 (pid 102 on 10.0.0.2, GPU 0)"


def test_no_rank_here_or_no_hostname_names_nothing() -> None:
    assert named(view(), frozenset({"127.0.0.1"}), "box") == view()
    assert named(view(), frozenset({"10.0.0.1"}), "") == view()
