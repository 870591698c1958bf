"""The topology view: the connection matrix coloured by quality, the NUMA nodes with the CPUs, GPUs and NICs
under each, each GPU's live PCIe and NVLink throughput with a marker on a degraded link, and each network port's
live throughput beside them."""

from __future__ import annotations

from rich.text import Text

from hwtop.advice.judge import link_degraded
from hwtop.advice.thresholds import Thresholds
from hwtop.model.snapshot import GpuSnapshot, NicSnapshot, NumaSnapshot, Topology
from hwtop.probes.sysfs import format_cpulist
from hwtop.widgets import palette
from hwtop.widgets.format import human_bytes, human_rate, pct
from hwtop.widgets.network import port_line
from hwtop.widgets.panel import TextPanel, View, Want
from hwtop.widgets.safe_text import data

STYLE = {"X": palette.DIM, "PIX": palette.LINK_SWITCH, "PXB": palette.LINK_SWITCH, "PHB": palette.LINK_HOST,
         "NODE": palette.LINK_NODE, "SYS": palette.LINK_FAR}


def link_style(kind: str) -> str:
    return palette.LINK_NVLINK if kind.startswith("NV") else STYLE.get(kind, "")


class TopologyPanel(TextPanel):
    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self.topology: Topology | None = None
        self.numa: NumaSnapshot | None = None
        self.gpus: tuple[GpuSnapshot, ...] = ()
        self.nics: tuple[NicSnapshot, ...] = ()
        self.thresholds = Thresholds()  # the session's (a config file's), given with each frame
        self.border_title = "Topology"

    def take(self, view: View) -> None:
        """The layout, the tick's NUMA reading (the memory panel's, a demo's own machine's; the topology's where it
        has none), and the GPUs' and ports' live figures."""
        snapshot = view.frame.snapshot
        topology = snapshot.topology
        self.topology, self.gpus, self.nics = topology, snapshot.gpus, snapshot.nics
        self.numa = snapshot.numa or (topology.numa if topology is not None else None)
        self.thresholds = view.thresholds

    def want(self, width: int) -> Want:
        """Every line: the screen scrolls it."""
        return Want.fixed(self._row_count(width))

    def draw(self, rows: int) -> None:
        """Every line, whatever `rows`: the screen scrolls it."""
        self.show(self.topology, self.numa, self.gpus, self.nics, self.thresholds)

    def show(self, topology: Topology | None, numa: NumaSnapshot | None, gpus: tuple[GpuSnapshot, ...],
             nics: tuple[NicSnapshot, ...] = (), thresholds: Thresholds | None = None) -> None:
        """`thresholds`: those the rules judge by, so a link is marked as the pcie-degraded finding says."""
        self.topology, self.numa, self.gpus, self.nics = topology, numa, gpus, nics
        self.thresholds = thresholds or self.thresholds
        if topology is not None:
            self.set_title(data(f"Topology · {topology.source} · r refresh"))
        self.changed()

    def lines(self, width: int) -> list[Text]:
        out: list[Text] = []
        topology = self.topology
        if topology is None or not topology.devices:
            out.append(Text("No GPU or NIC to place: NVML absent and no NIC with a PCI device. NUMA layout below.",
                            style=palette.WARN))
        else:
            out += self._matrix(topology, width)
            out.append(Text("NV# NVLink  PIX/PXB PCIe switch  PHB host bridge  NODE across host bridges  "
                            "SYS across NUMA nodes", style=palette.DIM))
        out.append(Text())
        out += self._numa_lines(width)
        ports = [n for n in self.nics if n.physical]
        if self.gpus or ports:
            out.append(Text())
            out += self._throughput()
            out += [port_line(nic, width) for nic in ports]  # the network beside PCIe and NVLink
        nics = [d for d in topology.devices if d.kind == "nic"] if topology else []
        if nics:
            out.append(Text())
            out.append(Text("NICs", style="bold"))
            for nic in nics:
                out.append(data(f"{nic.name:<10} {nic.bus_id}  node {'N/A' if nic.numa_node is None else nic.numa_node}"
                                f"  PCIe {nic.link_gen or '?'}x{nic.link_width or '?'}  {nic.network_speed or 'N/A'}"))
        return out

    def _matrix(self, topology: Topology, width: int) -> list[Text]:
        names, cell, legend = _labels(topology, width)
        columns = len(names)
        gpus = sum(1 for d in topology.devices if d.kind == "gpu")
        if cell * (columns + 1) > width and gpus:  # still too wide (a DGX: 8 GPUs and 8 HCAs): each row against
            columns = gpus  # the GPUs only; NIC against NIC is what `hwtop topo` prints in full
            legend.append(Text(f"NIC columns left out at this width ({len(names) - gpus}): hwtop topo prints them",
                               style=palette.DIM))
        affinity = width >= cell * (columns + 1) + 24
        header = Text(" " * cell + "".join(f"{n:>{cell}}" for n in names[:columns]), style="bold")
        if affinity:
            header.append("   CPU affinity     NUMA", style="bold")
        rows = [header]
        for label, device, links in zip(names, topology.devices, topology.links, strict=True):
            line = Text(f"{label:<{cell}}", style="bold")
            for kind in links[:columns]:
                line.append(f"{kind:>{cell}}", style=link_style(kind))
            if affinity:
                cpus = format_cpulist(device.local_cpus) if device.local_cpus else "N/A"
                line.append(f"   {cpus:<16} {'N/A' if device.numa_node is None else device.numa_node}")
            rows.append(line)
        return rows + legend

    def _numa_lines(self, width: int) -> list[Text]:
        if self.numa is None:
            return [Text("NUMA: N/A", style=palette.DIM)]
        devices = self.topology.devices if self.topology else ()
        out = []
        for node in self.numa.nodes:
            line = Text(f"node {node.index}", style=palette.GROUP)
            line.append(f"  cpus {format_cpulist(node.cpus) or 'none'}")
            if node.memory_total_bytes:  # "used" as the memory panel means it: total − available
                used, total = human_bytes(node.memory_used_bytes), human_bytes(node.memory_total_bytes)
                line.append(f"  mem {used} used of {total}")
            members = [d.name for d in devices if d.numa_node == node.index]
            if members:
                line.append("  ·  " + " ".join(members), style=palette.INFO)
            if node.distances:
                line.append(f"  distances {' '.join(map(str, node.distances))}", style=palette.DIM)
            out.append(line)
        unplaced = [d.name for d in devices if d.numa_node is None]
        if unplaced:
            out.append(Text("no NUMA node known: " + " ".join(unplaced), style=palette.DIM))
        return out

    def _throughput(self) -> list[Text]:
        out = [Text("live links", style="bold")]
        for gpu in self.gpus:
            line = Text(f"GPU{gpu.index:<3}", style="bold")
            pcie = gpu.pcie
            if pcie is not None:
                line.append(f" PCIe {pcie.gen or '?'}x{pcie.width or '?'} (max {pcie.max_gen or '?'}x"
                            f"{pcie.max_width or '?'}) ↑{human_rate(pcie.tx_bytes_per_s):>10} "
                            f"↓{human_rate(pcie.rx_bytes_per_s):>10}")
                if link_degraded(pcie, gpu.util_percent, self.thresholds):
                    line.append("  ⚠ degraded while busy", style=palette.CRIT_STRONG)
            if gpu.nvlink_tx_bytes_per_s is not None or gpu.nvlink_rx_bytes_per_s is not None:
                line.append(f"  NVLink ↑{human_rate(gpu.nvlink_tx_bytes_per_s):>10} "
                            f"↓{human_rate(gpu.nvlink_rx_bytes_per_s):>10}", style=palette.OK)
            line.append(f"  util {pct(gpu.util_percent)}")
            out.append(line)
        return out


def _labels(topology: Topology, width: int) -> tuple[list[str], int, list[Text]]:
    """The matrix's labels, its cell width and the legend they need: the devices' names, or on a narrow terminal
    short ones (G0, N0) explained below the matrix."""
    names = [d.name for d in topology.devices]
    cell = max(5, *(len(n) + 1 for n in names))
    if cell * (len(names) + 1) <= width:
        return names, cell, []
    nics = [d.name for d in topology.devices if d.kind == "nic"]
    names = [d.name.replace("GPU", "G") if d.kind == "gpu" else f"N{nics.index(d.name)}" for d in topology.devices]
    legend = [Text("G# = GPU#   " + "  ".join(f"N{i} = {n}" for i, n in enumerate(nics)), style=palette.DIM)] \
        if nics else []
    return names, 5, legend
