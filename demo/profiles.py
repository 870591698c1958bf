"""Built-in descriptions of real machines, for `--demo` and for tests: what each card reports and what it
answers NOT_SUPPORTED, as NVML does on that card.

Each card's figures carry their source beside them. "nvidia-smi -q" means the figure NVML itself reports for
that model (memory totals in MiB, the max clocks NVML gives, the idle P-state), which is not always the spec
sheet's: NVML's total is what the driver leaves usable, and a GeForce card's max SM clock is its VBIOS ceiling
(2100 MHz on Turing and Ampere GeForce boards), not the advertised boost clock. Which queries a class of card
does not support follows how NVML behaves there (GeForce cards have no ECC, MIG or GPM; SXM modules and
passively cooled data-centre cards report no fan; GPM exists from Hopper on); which the driver lacks is
demo/nvml/branches.py's business.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from hwtop.model.snapshot import DiskKind

from hwtop.model.owner import Owner

GIB = 1024**3
MIB = 1024**2


def _dgx_disks() -> tuple[tuple[str, DiskKind], ...]:
    """DGX A100: 2 NVMe for the OS (md RAID 1), 8 for data (md RAID 0), and a network mount."""
    nvme: list[tuple[str, DiskKind]] = [(f"nvme{i}n1", "nvme") for i in range(10)]
    return (*nvme, ("md0", "raid"), ("md1", "raid"), ("nfs0", "network"))


@dataclass(frozen=True, slots=True)
class GpuModel:
    name: str
    memory_bytes: int
    power_limit_w: float
    idle_power_w: float
    sm_max_mhz: int
    mem_max_mhz: int
    pcie_max_gen: int
    pcie_max_width: int
    compute_capability: tuple[int, int]
    nvlinks: int = 0
    has_fan: bool = True
    ecc: bool = False  # the card has ECC at all
    ecc_enabled: bool = True  # ...and ships with it on
    mig_capable: bool = False
    gpm: bool = False
    idle_pstate: int = 8  # data-centre cards with persistence mode stay in P0 when idle
    # Memory the driver reserves on this card (shown apart from "used" by the v2 memory info).
    reserved_bytes: int = 0


@dataclass(frozen=True, slots=True)
class DemoProcess:
    gpu: int
    pid: int
    kind: str  # compute | graphics | compute+graphics (listed by both NVML process queries)
    used_memory_bytes: int | None
    name: str


@dataclass(frozen=True, slots=True)
class DemoOwner:
    """Whose the ranks on `gpus` are (a Slurm job, a pod): their processes carry it, as probes/owners.py would
    read it from their cgroups; `user` runs them."""

    gpus: tuple[int, ...]
    owner: Owner
    user: str


@dataclass(frozen=True, slots=True)
class DemoNic:
    """A network port of a demo machine: `infiniband` for HCAs (mlx5_N), else an Ethernet port."""

    name: str
    speed_gbps: int
    infiniband: bool = False


@dataclass(frozen=True, slots=True)
class DemoHost:
    """The rest of a demo machine: what `hwtop report --demo` prints and what demo/host.py simulates, so that a
    demo shows no figure of the machine it runs on."""

    cpu_model: str
    physical_cores: int
    logical_cores: int
    l3_cache_bytes: int | None  # None: not known (a capture that did not record it)
    ram_bytes: int
    swap_bytes: int
    disks: tuple[tuple[str, DiskKind], ...]  # (name, kind)
    sockets: int = 1
    numa_nodes: int = 1
    nics: tuple[DemoNic, ...] = ()
    hostname: str = "demo"


@dataclass(frozen=True, slots=True)
class DemoProfile:
    name: str
    description: str
    gpu: GpuModel
    gpu_count: int
    driver_version: str
    cuda_driver_version: int  # as NVML encodes it: 12040 is CUDA 12.4
    busy_gpus: tuple[int, ...]  # the GPUs a training job runs on
    processes: tuple[DemoProcess, ...] = ()
    mig_gpus: tuple[int, ...] = ()  # GPUs in MIG mode (two 1g/3g slices each in the demo)
    bus_ids: tuple[str, ...] = field(default=())
    host: DemoHost | None = None
    owners: tuple[DemoOwner, ...] = ()  # none: the ranks are the user's own (demo/variants.py's shared, pod)

    def bus_id(self, index: int) -> str:
        if index < len(self.bus_ids):
            return self.bus_ids[index]
        return f"00000000:{0x17 + index * 0x10:02X}:00.0"


# GeForce GTX 1660 SUPER: 6 GB GDDR6 at 14 Gbps (7001 MHz), 125 W, PCIe 3.0 x16, TU116 (7.5; no Tensor Cores)
# (NVIDIA product page); nvidia-smi -q: 6144 MiB total, Max Clocks SM 2100 MHz / Memory 7001 MHz.
GTX_1660S = GpuModel("NVIDIA GeForce GTX 1660 SUPER", 6144 * MIB, 125, 9, 2100, 7001, 3, 16, (7, 5))
# GeForce RTX 3050 (8 GB): GDDR6 at 14 Gbps, 130 W, PCIe 4.0 x8, GA106 (8.6) (NVIDIA product page);
# nvidia-smi -q: 8192 MiB total, Max Clocks SM 2100 MHz / Memory 7001 MHz.
RTX_3050 = GpuModel("NVIDIA GeForce RTX 3050", 8192 * MIB, 130, 10, 2100, 7001, 4, 8, (8, 6))
# GeForce RTX 3090: 24 GB GDDR6X at 19.5 Gbps (9751 MHz), 350 W, PCIe 4.0 x16, GA102 (8.6) (NVIDIA product
# page); nvidia-smi -q: 24576 MiB total, Max Clocks SM 2100 MHz / Memory 9751 MHz.
RTX_3090 = GpuModel("NVIDIA GeForce RTX 3090", 24576 * MIB, 350, 22, 2100, 9751, 4, 16, (8, 6),
                    reserved_bytes=310 * MIB)
# RTX A4000: 16 GB GDDR6 with ECC, 140 W, PCIe 4.0 x16, single-slot blower, GA104 (8.6), boost 1560 MHz
# (NVIDIA RTX A4000 datasheet); ECC is off as shipped (nvidia-smi -q: Ecc Mode Current: Disabled).
A4000 = GpuModel("NVIDIA RTX A4000", 16384 * MIB, 140, 12, 1560, 7001, 4, 16, (8, 6), ecc=True,
                 ecc_enabled=False, reserved_bytes=270 * MIB)
# A100-SXM4-80GB: 80 GB HBM2e, 400 W, 12 NVLink 3 links, MIG, max SM 1410 MHz / memory 1593 MHz, no fan (SXM)
# (NVIDIA A100 datasheet); nvidia-smi -q: 81920 MiB total, Performance State P0 when idle.
A100_SXM4_80GB = GpuModel("NVIDIA A100-SXM4-80GB", 81920 * MIB, 400, 55, 1410, 1593, 4, 16, (8, 0),
                          nvlinks=12, has_fan=False, ecc=True, mig_capable=True, idle_pstate=0,
                          reserved_bytes=528 * MIB)
# H100 PCIe: 80 GB HBM2e, 350 W, PCIe 5.0 x16, passive (no fan reported), MIG, max SM 1755 MHz (NVIDIA H100
# datasheet); nvidia-smi -q: 81559 MiB total, P0 when idle.
H100_PCIE = GpuModel("NVIDIA H100 PCIe", 81559 * MIB, 350, 48, 1755, 1593, 5, 16, (9, 0), has_fan=False,
                     ecc=True, mig_capable=True, gpm=True, idle_pstate=0, reserved_bytes=600 * MIB)
# H200 (SXM): 141 GB HBM3e, up to 700 W, 18 NVLink 4 links, max SM 1980 MHz (NVIDIA H200 datasheet);
# nvidia-smi -q: 143771 MiB total, P0 when idle.
# Real H200s on driver 580.159.04 (tests/fixtures/gpu-capture/h200-r580): three cards idled at 76-82 W in P0;
# fan NOT_SUPPORTED, MIG mode readable (capable), GPM supported, ECC on, 644939776 bytes reserved (nvidia-smi:
# 616 MiB).
H200 = GpuModel("NVIDIA H200", 143771 * MIB, 700, 79, 1980, 3201, 5, 16, (9, 0), nvlinks=18, has_fan=False,
                ecc=True, mig_capable=True, gpm=True, idle_pstate=0, reserved_bytes=644939776)

_DGX_BUS = ("00000000:07:00.0", "00000000:0F:00.0", "00000000:47:00.0", "00000000:4E:00.0",
            "00000000:87:00.0", "00000000:90:00.0", "00000000:B7:00.0", "00000000:BD:00.0")


_MIB_L3 = 1024 * 1024
_ETH_1G = (DemoNic("enp5s0", 1),)
_ETH_10G = (DemoNic("enp65s0f0", 10),)
# DGX A100: eight ConnectX-6 HDR InfiniBand ports for the compute fabric (mlx5_0..7, 200 Gb/s) and two 100 GbE
# storage/management ports (DGX A100 user guide, network ports).
_DGX_NICS = tuple(DemoNic(f"mlx5_{i}", 200, infiniband=True) for i in range(8)) + (
    DemoNic("enp225s0f0", 100), DemoNic("enp225s0f1", 100))
HOSTS = {
    "gtx1660s": DemoHost("AMD Ryzen 5 3600 6-Core Processor", 6, 12, 32 * _MIB_L3, 16 * GIB, 2 * GIB,
                         (("sda", "ssd"),), nics=_ETH_1G, hostname="desktop-1660s"),
    "rtx3050": DemoHost("12th Gen Intel(R) Core(TM) i5-12400", 6, 12, 18 * _MIB_L3, 16 * GIB, 2 * GIB,
                        (("nvme0n1", "nvme"),), nics=_ETH_1G, hostname="desktop-3050"),
    "rtx3090": DemoHost("AMD Ryzen 9 5900X 12-Core Processor", 12, 24, 64 * _MIB_L3, 64 * GIB, 8 * GIB,
                        (("nvme0n1", "nvme"), ("sda", "hdd")), nics=_ETH_1G, hostname="desktop-3090"),
    "ws-2x3090": DemoHost("Intel(R) Xeon(R) Gold 6248R CPU @ 3.00GHz", 48, 96, 71 * _MIB_L3, 384 * GIB, 0,
                          (("nvme0n1", "nvme"), ("nvme1n1", "nvme")), sockets=2, numa_nodes=2, nics=_ETH_10G,
                          hostname="ws-2x3090"),
    "a4000": DemoHost("Intel(R) Xeon(R) W-2245 CPU @ 3.90GHz", 8, 16, 16 * _MIB_L3, 64 * GIB, 8 * GIB,
                      (("nvme0n1", "nvme"),), nics=_ETH_10G, hostname="ws-a4000"),
    # DGX A100 (640 GB): 2 x EPYC 7742, 2 TB RAM, 2 x 1.92 TB NVMe (OS, md RAID 1) and 8 x 3.84 TB NVMe (data,
    # md RAID 0) (DGX A100 user guide): md devices are "raid" to the disk probe, as on a real box; NUMA as
    # demo/topology.py lays the GPUs out (one node per socket).
    "dgx-a100": DemoHost("AMD EPYC 7742 64-Core Processor", 128, 256, 512 * _MIB_L3, 2048 * GIB, 0,
                         _dgx_disks(),
                         sockets=2, numa_nodes=2, nics=_DGX_NICS, hostname="dgx-a100-demo"),
    "h100-pcie": DemoHost("Intel(R) Xeon(R) Platinum 8480+", 112, 224, 210 * _MIB_L3, 1024 * GIB, 0,
                          (("nvme0n1", "nvme"), ("nvme1n1", "nvme")), sockets=2, numa_nodes=2, nics=_ETH_10G,
                          hostname="h100-pcie-demo"),
    # The VM of that capture: 16 vCPUs "Intel(R) Xeon(R) Processor", one NUMA node, 135129063424 bytes of RAM, no
    # swap, virtio disks vda and vdb; its L3 size was not recorded.
    "h200-vm": DemoHost("Intel(R) Xeon(R) Processor", 16, 16, None, 135129063424, 0,
                        (("vda", "virtual"), ("vdb", "virtual")), hostname="h200-vm-demo"),
    "h200": DemoHost("Intel(R) Xeon(R) Platinum 8480C", 112, 224, 210 * _MIB_L3, 2048 * GIB, 0,
                     tuple((f"nvme{i}n1", "nvme") for i in range(8)), sockets=2, numa_nodes=2,
                     nics=tuple(DemoNic(f"mlx5_{i}", 400, infiniband=True) for i in range(8)), hostname="h200-demo"),
}


def _ranks(count: int, memory: int, first_pid: int = 41000) -> tuple[DemoProcess, ...]:
    return tuple(DemoProcess(i, first_pid + i, "compute", memory, "python train.py") for i in range(count))


PROFILES: dict[str, DemoProfile] = {
    p.name: dataclasses.replace(p, host=HOSTS.get(p.name))
    for p in (
        DemoProfile("gtx1660s", "GeForce GTX 1660 SUPER 6 GB: the guide's entry tier, PCIe 3 x16",
                    GTX_1660S, 1, "535.183.01", 12020, (0,),
                    (DemoProcess(0, 3120, "graphics", None, "Xorg"),
                     DemoProcess(0, 41000, "compute", 4200 * MIB, "python train.py"))),
        DemoProfile("rtx3050", "GeForce RTX 3050 8 GB: entry tier, PCIe 4 x8", RTX_3050, 1, "550.90.07", 12040,
                    (0,), (DemoProcess(0, 41000, "compute", 5100 * MIB, "python train.py"),)),
        DemoProfile("rtx3090", "GeForce RTX 3090 24 GB: professional tier", RTX_3090, 1, "550.90.07", 12040,
                    (0,), (DemoProcess(0, 41000, "compute", 17 * GIB, "python train.py"),)),
        DemoProfile("ws-2x3090", "Dual-socket workstation: 2 x RTX 3090, one per socket, no NVLink bridge "
                    "(the GPUs talk over SYS)", RTX_3090, 2, "550.90.07", 12040, (0, 1), _ranks(2, 17 * GIB),
                    bus_ids=("00000000:17:00.0", "00000000:B3:00.0")),
        DemoProfile("a4000", "RTX A4000 16 GB: professional tier, ECC (off as shipped)", A4000, 1, "550.90.07",
                    12040, (0,), (DemoProcess(0, 41000, "compute", 11 * GIB, "python train.py"),)),
        DemoProfile("dgx-a100", "DGX A100: 8 x A100-SXM4-80GB, NVLink 3 through NVSwitch, MIG-capable",
                    A100_SXM4_80GB, 8, "550.90.07", 12040, tuple(range(8)), _ranks(8, 61 * GIB),
                    bus_ids=_DGX_BUS),
        DemoProfile("h100-pcie", "H100 PCIe 80 GB: PCIe 5 x16, GPM activity metrics", H100_PCIE, 1,
                    "560.35.03", 12060, (0,), _ranks(1, 52 * GIB)),
        DemoProfile("h200", "H200 141 GB (SXM): GPM activity metrics", H200, 1, "570.86.15", 12080, (0,),
                    _ranks(1, 98 * GIB)),
        # One H200 passed through to a cloud VM, as captured (tests/fixtures/gpu-capture/h200-r580): driver
        # 580.159.04, CUDA 13.0, PCIe 5 x16 at 00:06.0 and no NVLink (`nvidia-smi nvlink -s` empty).
        DemoProfile("h200-vm", "H200 in a cloud VM, PCIe 5 x16, no NVLink: modelled on a real capture",
                    dataclasses.replace(H200, nvlinks=0), 1, "580.159.04", 13000, (0,), _ranks(1, 98 * GIB),
                    bus_ids=("00000000:00:06.0",)),
    )
}


def get_profile(name: str) -> DemoProfile:
    try:
        return PROFILES[name]
    except KeyError:
        raise KeyError(f"unknown demo profile {name!r}; valid: {', '.join(PROFILES)}") from None
