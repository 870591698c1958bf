"""Network ports: every interface's traffic and link, every InfiniBand/RoCE port's, and where each sits.

Interfaces come from one read of the root's /proc/net/dev (as psutil.net_io_counters(pernic=True) reads it);
their link speed, state and PCI device from /sys/class/net/IF. InfiniBand and RoCE ports come from
/sys/class/infiniband/HCA/ports/N, whose `port_rcv_data`/`port_xmit_data` count 4-byte words (IBTA). A counter
that goes backwards (a reset, a re-created interface) or a legacy 32-bit IB counter stuck at its maximum is a gap
(None), never a spike. Static facts (kind, PCI device, NUMA node) are read once per name; link state and speed
every STATE_EVERY_S.
"""

from __future__ import annotations

import functools
import os
import time
from collections.abc import Callable, Hashable, Mapping

import msgspec

from hwtop.model.snapshot import NicKind, NicSnapshot, TopoDevice, Topology
from hwtop.probes.rates import RateMeter
from hwtop.probes.sysfs import proc_lines, read_text
from hwtop.probes.topology import QUALITY, normalize_bus_id

STATE_EVERY_S = 5.0  # link state and speed change rarely; counters are read every tick
IB_WORD_BYTES = 4  # port_rcv_data / port_xmit_data count 32-bit words
IB_LEGACY_SATURATED = 2**32 - 1  # a 32-bit PortCounters field sticks here (it saturates, never wraps)
ARPHRD_INFINIBAND = 32  # /sys/class/net/IF/type of an IPoIB interface
ARPHRD_LOOPBACK = 772
MAX_VIRTUAL = 32  # virtual interfaces kept in a snapshot, the busiest (every one is still read and rated)

# interface name → (bytes received, bytes sent), as read this tick
CountersSource = Callable[[], Mapping[str, tuple[int, int]]]


def psutil_counters() -> dict[str, tuple[int, int]]:
    """psutil's figures for this machine's /proc/net/dev: the reference proc_counters is held to."""
    import psutil

    # nowrap=False: a counter that goes backwards must reach the rate meter as such (a gap), not be "corrected"
    counters = psutil.net_io_counters(pernic=True, nowrap=False) or {}
    return {name: (c.bytes_recv, c.bytes_sent) for name, c in counters.items()}


def parse_net_dev(lines: list[bytes]) -> dict[str, tuple[int, int]]:
    """Each interface's (bytes received, bytes sent) from /proc/net/dev's lines, read as psutil reads them (two
    header lines; the name before the last colon, decoded as it decodes it; sixteen counters, received bytes first,
    sent bytes ninth); a line that is not so is left out (its interface N/A: sysfs.proc_lines' rule)."""
    counters = {}
    for line in lines[2:]:
        colon = line.rfind(b":")
        fields = line[colon + 1:].split()
        if colon <= 0 or len(fields) != 16:
            continue
        try:
            counters[os.fsdecode(line[:colon]).strip()] = (int(fields[0]), int(fields[8]))
        except ValueError:
            continue
    return counters


def proc_counters(proc: str = "/proc") -> dict[str, tuple[int, int]]:
    """psutil_counters' figures from `proc`/net/dev (the file psutil reads), without its record per interface,
    every tick; OSError where it cannot be read."""
    return parse_net_dev(proc_lines(proc, "net/dev"))


def printable_name(name: str) -> str:
    """An interface name as a record can carry it: undecodable bytes (os.listdir and psutil hand them over as
    surrogates, which no JSON encoder accepts) written as \\xNN. Control characters stay: safe_text shows them."""
    return name.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def parse_int(text: str | None) -> int | None:
    """A sysfs integer; None for a missing file, garbage, or the -1 that means "unknown" (speed, numa_node)."""
    if text is None:
        return None
    try:
        value = int(text.strip())
    except ValueError:
        return None
    return None if value < 0 else value


def parse_ib_state(text: str | None) -> str | None:
    """"4: ACTIVE" → "active"; "1: DOWN" → "down"."""
    if text is None:
        return None
    word = text.strip().partition(":")[2].strip() or text.strip()
    return word.lower() or None


def parse_ib_rate(text: str | None) -> float | None:
    """"200 Gb/sec (4X HDR)" → 200.0; "2.5 Gb/sec (1X SDR)" → 2.5; anything else → None."""
    if text is None:
        return None
    parts = text.split()
    if len(parts) < 2 or not parts[1].lower().startswith("gb"):
        return None
    try:
        value = float(parts[0])
    except ValueError:
        return None
    return value if 0 < value < 1e6 else None  # float() reads "inf" and "nan" too


def parse_speed_mbps(text: str | None) -> float | None:
    """/sys/class/net/IF/speed (Mb/s; -1 or unreadable while the link is down) → Gb/s."""
    mbps = parse_int(text)
    return None if not mbps or mbps > 10_000_000 else mbps / 1000.0


def _pci_bus_id(root: str, device_link: str) -> str | None:
    """The PCI function a `device` link points to, or the one it sits under (a VM's virtio NIC is virtio2 below its
    PCI function); None for a device on no PCI bus (usb, a platform device)."""
    real = os.path.realpath(os.path.join(root, device_link))
    for name in (os.path.basename(real), os.path.basename(os.path.dirname(real))):
        if name and os.path.exists(os.path.join(root, "sys/bus/pci/devices", name)):
            try:
                return normalize_bus_id(name)
            except ValueError:
                return None
    return None


def _numa_node(root: str, bus_id: str | None, device_link: str) -> int | None:
    """The PCI function's NUMA node (-1, "none", is None), else the device's own where it has one."""
    if bus_id is not None:
        return parse_int(read_text(root, f"sys/bus/pci/devices/{bus_id}/numa_node"))
    return parse_int(read_text(root, f"{device_link}/numa_node"))


class _Netdev:
    """What does not change while an interface exists."""

    __slots__ = ("bus_id", "kind", "numa_node")
    kind: NicKind

    def __init__(self, root: str, name: str) -> None:
        base = f"sys/class/net/{name}"
        kind_code = parse_int(read_text(root, f"{base}/type"))
        has_device = os.path.exists(os.path.join(root, base, "device"))
        if kind_code == ARPHRD_LOOPBACK or name == "lo":
            self.kind = "loopback"
        elif not has_device:
            self.kind = "virtual"  # veth, bridges, docker0, tun, bonds: no hardware of their own
        elif kind_code == ARPHRD_INFINIBAND:
            self.kind = "infiniband"  # IPoIB: the IP side of an IB port
        else:
            self.kind = "ethernet"
        self.bus_id = _pci_bus_id(root, f"{base}/device") if has_device else None
        self.numa_node = _numa_node(root, self.bus_id, f"{base}/device") if has_device else None


class _IbPort:
    __slots__ = ("bus_id", "hca", "kind", "netdev", "numa_node", "port")
    kind: NicKind

    def __init__(self, root: str, hca: str, port: int) -> None:
        base = f"sys/class/infiniband/{hca}"
        self.hca, self.port = hca, port
        layer = (read_text(root, f"{base}/ports/{port}/link_layer") or "").strip().lower()
        self.kind = "roce" if layer == "ethernet" else "infiniband"
        self.bus_id = _pci_bus_id(root, f"{base}/device")
        self.numa_node = _numa_node(root, self.bus_id, f"{base}/device")
        self.netdev = _netdev_of(root, hca, port)


def _netdev_of(root: str, hca: str, port: int) -> str | None:
    """The interface behind an HCA port: the RoCE GID table's netdev, else the device's one interface (or the one
    whose dev_port is this port)."""
    base = f"sys/class/infiniband/{hca}"
    ndev = read_text(root, f"{base}/ports/{port}/gid_attrs/ndevs/0")
    if ndev and ndev.strip():
        return ndev.strip()
    try:
        names = sorted(os.listdir(os.path.join(root, base, "device/net")))
    except OSError:
        return None
    if len(names) == 1:
        return names[0]
    for name in names:
        if parse_int(read_text(root, f"{base}/device/net/{name}/dev_port")) == port - 1:
            return name
    return None


def _list_ib_ports(root: str) -> list[tuple[str, int]]:
    base = os.path.join(root, "sys/class/infiniband")
    try:
        hcas = sorted(os.listdir(base))
    except OSError:
        return []
    ports = []
    for hca in hcas:
        try:
            numbers = sorted(int(p) for p in os.listdir(os.path.join(base, hca, "ports")) if p.isdigit())
        except OSError:
            continue
        ports.extend((hca, n) for n in numbers)
    return ports


class NetworkProbe:
    """Reads every port each tick (see the module docstring)."""

    def __init__(self, root: str = "/", counters: CountersSource | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.root = root
        self._counters = counters or functools.partial(proc_counters, os.path.join(root, "proc"))
        self._clock = clock
        self._rates = RateMeter()
        self._netdevs: dict[str, _Netdev] = {}
        self._ib: list[_IbPort] | None = None
        self._links: dict[tuple[str, int | None], tuple[str | None, float | None]] = {}
        self._links_at: float | None = None

    def read(self) -> tuple[NicSnapshot, ...]:
        now = self._clock()
        refresh = self._links_at is None or now - self._links_at >= STATE_EVERY_S
        if refresh:
            self._links_at = now
            self._ib = [_IbPort(self.root, hca, port) for hca, port in _list_ib_ports(self.root)]
        seen: set[Hashable] = set()
        counters = self._counters()
        out = [self._read_netdev(name, rx, tx, now, refresh, seen) for name, (rx, tx) in sorted(counters.items())]
        for ib in self._ib or ():
            out.append(self._read_ib(ib, now, refresh, seen))
        self._rates.forget_except(seen)
        if len(self._netdevs) > len(counters) or len(self._links) > len(counters) + len(self._ib or ()):
            self._bound(counters)
        return keep_virtual(out)

    def _read_netdev(self, name: str, rx: int, tx: int, now: float, refresh: bool,
                     seen: set[Hashable]) -> NicSnapshot:
        facts = self._netdevs.get(name)
        if facts is None:
            facts = self._netdevs[name] = _Netdev(self.root, name)
        link = (name, None)
        if refresh or link not in self._links:
            base = f"sys/class/net/{name}"
            speed = (parse_speed_mbps(read_text(self.root, f"{base}/speed"))
                     if facts.kind not in ("virtual", "loopback") else None)
            state = read_text(self.root, f"{base}/operstate")
            self._links[link] = (state.strip().lower() if state else None, speed)
        state, speed = self._links[link]
        received, sent = (name, "rx"), (name, "tx")
        seen.add(received)
        seen.add(sent)
        return NicSnapshot(
            name=printable_name(name), kind=facts.kind, speed_gbps=speed,
            rx_bytes_per_s=self._rates.rate(received, float(rx), now),
            tx_bytes_per_s=self._rates.rate(sent, float(tx), now),
            state=state, numa_node=facts.numa_node, rx_bytes_total=rx, tx_bytes_total=tx, bus_id=facts.bus_id)

    def _bound(self, counters: Mapping[str, tuple[int, int]]) -> None:
        """Interfaces and HCAs come and go (containers' veths, a hot-unplugged card): forget those gone."""
        ports = {(ib.hca, ib.port) for ib in self._ib or ()}
        self._netdevs = {k: v for k, v in self._netdevs.items() if k in counters}
        self._links = {k: v for k, v in self._links.items() if k in ports or (k[1] is None and k[0] in counters)}

    def _read_ib(self, ib: _IbPort, now: float, refresh: bool, seen: set[Hashable]) -> NicSnapshot:
        base = f"sys/class/infiniband/{ib.hca}/ports/{ib.port}"
        key = (ib.hca, ib.port)
        if refresh or key not in self._links:
            self._links[key] = (parse_ib_state(read_text(self.root, f"{base}/state")),
                                parse_ib_rate(read_text(self.root, f"{base}/rate")))
        state, speed = self._links[key]
        rates: list[float | None] = []
        totals: list[int | None] = []
        for direction, counter in (("rx", "port_rcv_data"), ("tx", "port_xmit_data")):
            words = parse_int(read_text(self.root, f"{base}/counters/{counter}"))
            rate_key = (ib.hca, ib.port, direction)
            if words is None or words == IB_LEGACY_SATURATED:  # not in `seen`: the next good read starts afresh
                rates.append(None)
                totals.append(None)
                continue
            seen.add(rate_key)
            rate = self._rates.rate(rate_key, float(words * IB_WORD_BYTES), now)
            rates.append(rate)
            totals.append(words * IB_WORD_BYTES)
        return NicSnapshot(
            name=printable_name(ib.hca), kind=ib.kind, speed_gbps=speed, rx_bytes_per_s=rates[0],
            tx_bytes_per_s=rates[1], state=state, port=ib.port,
            netdev=printable_name(ib.netdev) if ib.netdev else None, numa_node=ib.numa_node,
            rx_bytes_total=totals[0], tx_bytes_total=totals[1], bus_id=ib.bus_id)


def keep_virtual(nics: list[NicSnapshot], most: int = MAX_VIRTUAL) -> tuple[NicSnapshot, ...]:
    """Every physical port and loopback; of the virtual interfaces (a Kubernetes node has hundreds of veths) the
    `most` busiest, in their order, so a snapshot and a recording stay small."""
    virtual = [i for i, n in enumerate(nics) if n.kind == "virtual"]
    if len(virtual) <= most:
        return tuple(nics)
    busiest = set(sorted(virtual, key=lambda i: -((nics[i].rx_bytes_per_s or 0.0) + (nics[i].tx_bytes_per_s or 0.0)))
                  [:most])
    return tuple(n for i, n in enumerate(nics) if n.kind != "virtual" or i in busiest)


def nearest_gpus(topology: Topology) -> dict[str, int]:
    """NIC (PCI bus id and name) → the GPU closest to it in the `nvidia-smi topo -m` matrix (PIX before PXB before
    PHB before NODE before SYS). NICs that share the same closest GPUs (two ports beside a pair of GPUs on one
    switch) are paired with them in bus order, as NCCL pairs them, rather than all naming the first."""
    gpus = [i for i, d in enumerate(topology.devices) if d.kind == "gpu" and d.name[3:].isdigit()]
    groups: dict[tuple[int, ...], list[TopoDevice]] = {}
    for row, device in enumerate(topology.devices):
        if device.kind != "nic" or row >= len(topology.links) or not gpus:
            continue
        links = topology.links[row]
        ranked = [(QUALITY.get(links[g].rstrip("0123456789"), 9), g) for g in gpus if g < len(links)]
        if ranked:
            best = min(q for q, _ in ranked)
            groups.setdefault(tuple(g for q, g in ranked if q == best), []).append(device)
    out: dict[str, int] = {}
    for tied, nics in groups.items():
        for k, device in enumerate(nics):
            out[device.bus_id] = out[device.name] = int(topology.devices[tied[k % len(tied)]].name[3:])
    return out


def numa_of_nics(topology: Topology) -> dict[str, int]:
    return {key: d.numa_node for d in topology.devices if d.kind == "nic" and d.numa_node is not None
            for key in (d.bus_id, d.name)}


def place_nics(nics: tuple[NicSnapshot, ...], topology: Topology | None) -> tuple[NicSnapshot, ...]:
    """Each physical port with its nearest GPU (and its NUMA node where the port did not say), from the topology
    already read: by PCI address, else by name (a demo topology's NICs have no port record of their own)."""
    if topology is None or not nics:
        return nics
    nearest, nodes = nearest_gpus(topology), numa_of_nics(topology)
    if not nearest and not nodes:
        return nics
    placed = []
    for nic in nics:
        key = nic.bus_id if nic.bus_id in nearest or nic.bus_id in nodes else nic.name
        gpu = nic.nearest_gpu if nic.nearest_gpu is not None else nearest.get(key) if key else None
        node = nic.numa_node if nic.numa_node is not None else nodes.get(key) if key else None
        placed.append(nic if (gpu, node) == (nic.nearest_gpu, nic.numa_node) or not nic.physical
                      else msgspec.structs.replace(nic, nearest_gpu=gpu, numa_node=node))
    return tuple(placed)
