"""The network panel: busy ports one line each with their share of the line rate, quiet ones folded, names kept
as inert text, every line inside the width it was built for."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hwtop.advice.thresholds import Thresholds
from hwtop.model.snapshot import NicSnapshot
from hwtop.widgets.network import NetworkPanel, fit_name, line_percent, port_line, shown_ports
from hwtop.widgets.safe_text import visible


def ib(i: int, rate: float, node: int = 0) -> NicSnapshot:
    return NicSnapshot(f"mlx5_{i}", "infiniband", 200.0, rate, rate * 0.9, state="active", port=1, numa_node=node,
                       nearest_gpu=i)


DGX = tuple(ib(i, 12.5e9 if i in (1, 2, 5) else 2e3, i // 4) for i in range(8)) + (
    NicSnapshot("enp225s0f0", "ethernet", 100.0, 3e3, 1e3, state="up", numa_node=1),
    NicSnapshot("enp225s0f1", "ethernet", 100.0, 0.0, 0.0, state="down", numa_node=1),
    NicSnapshot("lo", "loopback", None, 9e6, 9e6, state="unknown"),
    NicSnapshot("veth9", "virtual", None, 5e6, 5e6, state="up"))


def panel_lines(nics: tuple[NicSnapshot, ...], room: int, width: int) -> list[str]:
    panel = NetworkPanel()
    panel.show(nics, room)
    return [line.plain for line in panel.lines(width)]


def test_busy_ports_one_line_each_quiet_ones_folded() -> None:
    lines = panel_lines(DGX, 4, 76)
    assert lines == [
        "mlx5_1   IB     200Gb/s rx  50%  12.5GB/s tx  45%  11.2GB/s N0 G1",
        "mlx5_2   IB     200Gb/s rx  50%  12.5GB/s tx  45%  11.2GB/s N0 G2",
        "mlx5_5   IB     200Gb/s rx  50%  12.5GB/s tx  45%  11.2GB/s N1 G5",
        "+7 quiet (5 IB, 2 Eth) 1 down",
    ]  # loopback and the veth are not ports of this box's network: kept apart, not counted


def test_wide_lines_name_the_node_the_gpu_and_the_folded_ports() -> None:
    lines = panel_lines(DGX, 10, 120)
    assert lines[0].endswith("node 0 near GPU1")
    assert lines[-1] == ("+7 quiet (5 IB, 2 Eth) 1 down: mlx5_0 mlx5_3 mlx5_4 mlx5_6 mlx5_7 enp225s0f0 "
                         "enp225s0f1")


def test_at_200_columns_two_ports_a_line() -> None:
    eight = tuple(ib(i, 12e9, i // 4) for i in range(8)) + DGX[8:10]
    lines = panel_lines(eight, 5, 196)
    assert len(lines) == 5 and lines[-1].startswith("+2 quiet (2 Eth)")
    assert [line.split()[0] for line in lines[:4]] == ["mlx5_0", "mlx5_2", "mlx5_4", "mlx5_6"]
    assert all(line.count("near GPU") == 2 and len(line) <= 196 for line in lines[:4])
    assert lines[3].endswith("node 1 near GPU7")
    assert panel_lines(eight, 3, 196)[-1].startswith("+6 quieter")  # four shown, the rest said


def test_a_short_terminal_gets_one_bare_line() -> None:
    panel = NetworkPanel()
    panel.show(DGX, 0)
    (line,) = [line.plain for line in panel.lines(76)]
    assert line == "Network mlx5_1   IB     200Gb/s rx  50%  12.5GB/s tx  45%  11.2GB/s N0 G1 +9"
    assert panel.quiet  # no border: one row of the screen
    panel.show(DGX, 0)
    assert [line.plain for line in panel.lines(196)][0].endswith("+9 quieter (7 IB, 2 Eth) 1 down")
    panel.show(tuple(ib(i, 10.0, 0) for i in range(2)), 0)
    assert [line.plain for line in panel.lines(76)] == ["Network 2 ports quiet (2 IB)"]


def test_a_short_room_keeps_the_busiest_in_their_order_and_says_so() -> None:
    nics = (ib(0, 2e9), ib(1, 9e9), ib(2, 5e9))
    shown, folded = shown_ports(nics, 2, Thresholds())
    assert [n.name for n in shown] == ["mlx5_1"] and folded == 2
    assert panel_lines(nics, 2, 76)[-1] == "+2 quieter (2 IB)"  # busy ones folded: not "quiet"


def test_all_quiet_and_no_ports() -> None:
    quiet = tuple(ib(i, 10.0) for i in range(3))
    assert panel_lines(quiet, 3, 76) == ["Network 3 ports quiet (3 IB)"]
    assert panel_lines((NicSnapshot("lo", "loopback", None, 1e9, 1e9),), 3, 76) == ["Network no network ports"]


def test_a_container_shows_its_veth_when_it_has_nothing_else() -> None:
    nics = (NicSnapshot("lo", "loopback", None, 0.0, 0.0), NicSnapshot("eth0", "virtual", None, 4e6, 1e6))
    assert panel_lines(nics, 3, 76)[0].startswith("eth0     virt       N/A rx  N/A   4.0MB/s")


def test_a_roce_port_names_its_interface_and_a_down_port_says_so() -> None:
    roce = NicSnapshot("mlx5_2", "roce", 100.0, 5e9, 5e9, state="down", port=2, netdev="ens1f1", numa_node=1)
    (line,) = panel_lines((roce,), 3, 120)
    assert line.startswith("mlx5_2/2    RoCE   100Gb/s rx  40%") and "down" in line and line.endswith("(ens1f1)")


def test_names_are_cut_keeping_the_end_where_ports_differ() -> None:
    assert fit_name("enp225s0f1", 8) == "enp22…f1" and fit_name("eth0", 8) == "eth0"
    assert line_percent(25e9, 200.0) == 100.0 and line_percent(1.0, None) is None


def test_wide_characters_are_measured_in_cells() -> None:
    """A CJK character takes two cells: counted as one, the interface in brackets ran one cell past the width
    (hypothesis found it: netdev '0\U00020000', a dormant port, width 94), and a wide name pushed every column."""
    assert fit_name("\U00020000" * 6, 8) == "\U00020000 …\U00020000\U00020000"  # 2 cells, a space, 1, 4: 8
    dormant = NicSnapshot("0", "infiniband", None, None, 1e6, state="dormant", netdev="0\U00020000", nearest_gpu=0)
    named = NicSnapshot("\u6570\u636e" * 4, "ethernet", 100.0, 1e9, 1e9, state="up")
    plain = NicSnapshot("eth0", "ethernet", 100.0, 1e9, 1e9, state="up")
    for width in range(66, 221):
        assert port_line(dormant, width).cell_len <= width, width
        wide, narrow = port_line(named, width), port_line(plain, width)
        assert wide.cell_len == narrow.cell_len <= width, (wide.plain, narrow.plain)  # the columns line up


names = st.text(alphabet=st.characters(codec="utf-8"), min_size=1, max_size=24)
rates = st.none() | st.floats(min_value=0, max_value=1e12, allow_nan=False)
nic_strategy = st.builds(
    NicSnapshot, names, st.sampled_from(["infiniband", "roce", "ethernet", "virtual", "loopback"]),
    st.none() | st.floats(min_value=0.001, max_value=3200, allow_nan=False), rates, rates,
    state=st.none() | st.sampled_from(["up", "down", "active", "init", "dormant"]),
    port=st.none() | st.integers(1, 4), netdev=st.none() | names, numa_node=st.none() | st.integers(0, 7),
    nearest_gpu=st.none() | st.integers(0, 15))


@given(st.lists(nic_strategy, max_size=12), st.integers(0, 8), st.integers(66, 220))
@pytest.mark.slow  # over the fast suite's minute on two cores (--durations)
def test_any_ports_render_inside_the_width_as_inert_text(nics: list[NicSnapshot], room: int, width: int) -> None:
    panel = NetworkPanel()
    panel.show(tuple(nics), room)
    lines = panel.lines(width)
    assert 1 <= len(lines) <= max(1, room + 1)
    for line in lines if room == 0 else lines[:-1]:  # the one bare line, and every port line, fit the width
        assert line.cell_len <= width, line.plain
    for line in lines:
        shown = visible(line).plain
        assert not re.search("[\x00-\x1f\x7f-\x9f\u2028\u2029\ud800-\udfff]", shown), shown
