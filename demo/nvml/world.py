"""The simulated cards behind the fake library: what each holds at an instant, and how it moves.

Load is a training job's rhythm, constant within each whole second (so every byte counter is an exact
integral of its rate, whatever the pattern of reads). Counters are cumulative and wrap at their width, as
the driver's do; field values carry the time their value was sampled. Everything is a pure function of
(profile, seed, clock, what tests and scenarios changed), so a test can ask `truth()` what the probe should
have reported.
"""

from __future__ import annotations

import math
import random
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache

from hwtop.demo.profiles import MIB, DemoProcess, DemoProfile, GpuModel

EPOCH_S = 1_700_000_000.0  # the fake's wall clock at clock 0: field and sample timestamps are in µs since 1970

# Clock event reasons (nvml.h nvmlClocksEventReason*)
EVENT = {"idle": 0x1, "sw_power_cap": 0x4, "hw_slowdown": 0x8, "sw_thermal": 0x20, "hw_thermal": 0x40}
THROTTLING = EVENT["sw_power_cap"] | EVENT["hw_slowdown"] | EVENT["sw_thermal"] | EVENT["hw_thermal"]
# What nvmlDeviceGetViolationStatus counts the time of, by policy: the power limit, and heat
VIOLATION_EVENTS = {"power": EVENT["sw_power_cap"], "thermal": EVENT["sw_thermal"] | EVENT["hw_thermal"]}

PCIE_RX_PER_LOAD = 0.6e9  # bytes/s of batches crossing PCIe at full load; TX is 30 % of it
NVLINK_KIB_PER_LOAD = 45e6  # KiB/s over all of a GPU's NVLinks at full load (gradient all-reduce)


@dataclass(slots=True)
class GpuTruth:
    """What the fake card holds right now, in the units NVML reports (mW, KiB, MHz, bytes)."""

    util: int
    mem_util: int
    used: int
    reserved: int
    total: int
    temperature: int
    power_mw: int
    power_limit_mw: int
    sm_clock: int
    mem_clock: int
    fan: int
    pstate: int
    event_reasons: int
    pcie_gen: int
    pcie_width: int
    pcie_tx_bytes: int  # cumulative, unwrapped
    pcie_rx_bytes: int
    nvlink_tx_kib: tuple[int, ...]  # per link, cumulative, unwrapped
    nvlink_rx_kib: tuple[int, ...]
    pcie_tx_rate: float  # bytes/s in this second
    pcie_rx_rate: float
    nvlink_tx_rate: float  # bytes/s over all links in this second
    nvlink_rx_rate: float
    ecc_corrected: int
    ecc_uncorrected: int
    power_violation_ns: int  # cumulative, from clock 0 (0 without counters)
    thermal_violation_ns: int
    sm_activity: float
    sm_occupancy: float
    tensor_activity: float
    dram_bw_util: float


@dataclass(frozen=True, slots=True)
class Target:
    """What an nvmlDevice_t handle (an address the library handed out) points at: a GPU, or one MIG slice."""

    gpu: int
    mig_slot: int | None = None


@dataclass(slots=True)
class Counter:
    """A cumulative counter: the exact integral of a rate that is constant within each whole second, kept as
    one checkpoint that moves forward (or back, for a field value the driver sampled a moment ago)."""

    at: float
    value: float = 0.0

    def value_at(self, to: float, rate_at: Callable[[float], float]) -> float:
        while self.at < to:
            end = min(math.floor(self.at) + 1.0, to)
            self.value += rate_at(self.at) * (end - self.at)
            self.at = end
        while self.at > to:
            start = max(math.ceil(self.at) - 1.0, to)
            self.value -= rate_at(start) * (self.at - start)
            self.at = start
        return self.value


@dataclass(slots=True)
class EventQueue:
    """One NVML event set: the GPUs registered on it and the events not yet waited for."""

    gpus: set[int] = field(default_factory=set)
    events: deque[tuple[int, int]] = field(default_factory=deque)  # (GPU index, XID)


MEMORY_RAMP_S = 20.0
TRUTHS_KEPT = 2  # per card: the instant being read, and the one a GPM sample was taken at


def memory_ramp(t: float) -> float:
    """The share of its memory a job has allocated t seconds in: it grows over its first batches. The demo job's
    own figures (demo/job.py) follow the same ramp, so a rank never reports more than its GPU holds."""
    return max(0.0, min(1.0, t / MEMORY_RAMP_S))


@dataclass(slots=True)
class Card:
    """One simulated GPU and everything tests and scenarios can change about it."""

    index: int
    model: GpuModel
    busy: bool
    processes: list[DemoProcess]
    mig: bool = False
    ecc_enabled: bool = False
    lost: bool = False
    load_changes: list[tuple[float, float | None]] = field(default_factory=list)  # (from, forced load or None)
    forced_reasons: int = 0
    pcie_gen_override: int | None = None
    pcie_width_override: int | None = None
    links_down: set[int] = field(default_factory=set)
    link_shares: tuple[float, ...] | None = None  # share of the NVLink traffic each link carries
    ecc_corrected: int = 0
    ecc_uncorrected: int = 0
    ancestors: dict[int, int] = field(default_factory=dict)
    field_lag_s: float = 0.0  # how old the driver's cached field values are when read
    sample_quirks: set[str] = field(default_factory=set)  # per-process utilization quirks (library.py)
    pcie_replays: int = 0  # PCIe replays since the driver loaded (a marginal riser or slot retries packets)
    temperature_offset: float = 0.0  # degrees above what its load alone gives (a story's failing airflow)
    spin_power_w: float | None = None  # busy but idle inside: kernels spinning on a flag (a hung collective)
    # The row remapper (HBM cards): rows remapped after (correctable, uncorrectable) errors, a remap waiting for a
    # reset, a remap that failed; NVLink errors by (link, nvmlNvLinkErrorCounter_t), as the driver counts them
    remapped_rows: tuple[int, int] = (0, 0)
    remap_pending: bool = False
    remap_failed: bool = False
    nvlink_errors: dict[tuple[int, int], int] = field(default_factory=dict)
    counters: dict[str, Counter] = field(default_factory=dict)
    # The last few truth(counters=False) answers, each with every input it was computed from (World.truth_key).
    truths: list[tuple[tuple[object, ...], GpuTruth]] = field(default_factory=list, repr=False, compare=False)


@lru_cache(maxsize=4096)
def _power_jitter(seed: int, index: int, second: int) -> tuple[float, float]:
    """A card's power noise in one second: the first two draws of that second's generator (a busy card's, then a
    spinning one's). Cached: seeding a generator from text hashes it, and truth() is asked a dozen times a tick."""
    rng = random.Random(f"{seed}:{index}:{second}")
    busy = rng.uniform(-2, 2)
    return busy, rng.uniform(-1, 1)


@lru_cache(maxsize=4096)
def _training_load(seed: int, index: int, second: int) -> float:
    """A training step rhythm: high utilization with a dip at each (simulated) eval or checkpoint."""
    rng = random.Random(f"{seed}:{index}:{second}")
    load = 0.86 + 0.08 * math.sin(second / 6.0 + index) + rng.uniform(-0.03, 0.03)
    if second % 60 >= 57:
        load = 0.15
    return max(0.0, min(1.0, load))


class World:
    """All cards of a profile over the fake's clock."""

    def __init__(self, profile: DemoProfile, seed: int) -> None:
        self.profile = profile
        self.seed = seed
        model = profile.gpu
        self.cards = [
            Card(i, model, i in profile.busy_gpus, [p for p in profile.processes if p.gpu == i],
                 mig=i in profile.mig_gpus, ecc_enabled=model.ecc and model.ecc_enabled)
            for i in range(profile.gpu_count)
        ]

    # ----- load and rates -----

    @staticmethod
    def forced_load(card: Card, t: float) -> float | None:
        """The load a test or scenario forced at time t (changes apply from the moment they are made)."""
        for since, value in reversed(card.load_changes):
            if since <= t:
                return value
        return None

    def load(self, card: Card, t: float) -> float:
        forced = self.forced_load(card, t)
        if forced is not None:
            return max(0.0, min(1.0, forced))
        if not card.busy:
            return 0.0
        return _training_load(self.seed, card.index, math.floor(t))

    def active_links(self, card: Card) -> list[int]:
        return [link for link in range(card.model.nvlinks) if link not in card.links_down]

    def link_share(self, card: Card, link: int) -> float:
        """The share of the card's NVLink traffic link `link` carries (asked per counter per simulated second:
        the list of active links is built only when some are down)."""
        if link in card.links_down or not 0 <= link < card.model.nvlinks:
            return 0.0
        if card.link_shares is not None:
            return card.link_shares[link]
        return 1.0 / (len(self.active_links(card)) if card.links_down else card.model.nvlinks)

    def rate(self, card: Card, name: str, t: float, load: float | None = None) -> float:
        """Counter `name`'s rate at time t: pcie_tx/pcie_rx in bytes/s, nvl_txN/nvl_rxN in KiB/s (link N),
        energy in mJ/s (the power in mW: the energy counter is its integral). `load`: the card's at t, if known."""
        if load is None:
            load = self.load(card, t)
        if name == "energy":
            return float(round(self.power_w(card, t, load) * 1000))
        if name == "pcie_rx":
            return PCIE_RX_PER_LOAD * load
        if name == "pcie_tx":
            return 0.3 * PCIE_RX_PER_LOAD * load
        return NVLINK_KIB_PER_LOAD * load * self.link_share(card, int(name[6:])) if load else 0.0

    def counter(self, card: Card, name: str, t: float, loads: dict[float, float] | None = None) -> int:
        """The cumulative counter `name` at time t (pcie_tx/pcie_rx in bytes, nvl_txN/nvl_rxN in KiB), counted
        from clock 0. (A link going down applies to the counters from the next reading on.) `loads`: the card's
        load by instant, shared by the counters one call reads (a field-values call reads two dozen at one time,
        their checkpoints at the same instants)."""
        counter = card.counters.get(name)
        if counter is None:
            counter = card.counters[name] = Counter(0.0)
        if loads is None:
            return int(counter.value_at(max(t, 0.0), lambda at: self.rate(card, name, at)))

        def rate_at(at: float) -> float:
            load = loads.get(at)
            if load is None:
                load = loads[at] = self.load(card, at)
            return self.rate(card, name, at, load)
        return int(counter.value_at(max(t, 0.0), rate_at))

    def event_reasons(self, card: Card, load: float, power: float) -> int:
        """The card's clock event reasons under `load` drawing `power`: those forced, idle, and the power cap."""
        reasons = card.forced_reasons
        if load == 0:
            reasons |= EVENT["idle"]
        if power >= card.model.power_limit_w * 0.98:
            reasons |= EVENT["sw_power_cap"]
        return reasons

    def violation_ns(self, card: Card, policy: str, t: float) -> int:
        """nvmlDeviceGetViolationStatus's time at t (ns from clock 0): the seconds in which the card's event reasons
        held `policy`'s ("power", "thermal"). A reason forced counts from the last reading on, as it applies then."""
        counter = card.counters.get(f"violation_{policy}")
        if counter is None:
            counter = card.counters[f"violation_{policy}"] = Counter(0.0)
        events = VIOLATION_EVENTS[policy]

        def rate_at(at: float) -> float:
            load = self.load(card, at)
            return 1e9 if self.event_reasons(card, load, self.power_w(card, at, load)) & events else 0.0
        return int(counter.value_at(max(t, 0.0), rate_at))

    # ----- the whole state -----

    def job_memory(self, card: Card) -> int:
        return sum(p.used_memory_bytes or 0 for p in card.processes if "compute" in p.kind)

    def power_w(self, card: Card, t: float, load: float) -> float:
        """The card's power at t under `load` (its load at t): what truth() reports and the energy counter sums."""
        model = card.model
        busy_jitter, spin_jitter = _power_jitter(self.seed, card.index, math.floor(t))
        power = model.idle_power_w + (model.power_limit_w - model.idle_power_w) * load * 0.93
        power += busy_jitter if load else 0
        power = max(model.idle_power_w * 0.8, min(model.power_limit_w, power))
        if card.spin_power_w is not None and load:
            power = card.spin_power_w + spin_jitter
        return power

    def truth_key(self, card: Card, t: float) -> tuple[object, ...]:
        """Every input of truth(card, t, counters=False): t enters only through its whole second, the load a test
        forced then and the memory ramp, so reads within one second share an answer (the world's own parts,
        the profile and the seed, never change)."""
        links_down = frozenset(card.links_down) if card.links_down else None
        return (math.floor(t), self.forced_load(card, t), memory_ramp(t), card.model, card.busy, card.forced_reasons,
                card.spin_power_w, card.pcie_gen_override, card.pcie_width_override, card.temperature_offset,
                links_down, card.ecc_enabled, card.ecc_corrected, card.ecc_uncorrected, tuple(card.processes))

    def truth(self, card: Card, t: float, counters: bool = True) -> GpuTruth:
        """Everything the card holds at t; without `counters`, the cumulative counters read 0 (cheaper, and
        remembered while its inputs stay the same: a probe asks a dozen times a read; callers must not change
        the answer)."""
        if counters:
            return self._truth(card, t, counters=True)
        key = self.truth_key(card, t)
        for known, answer in card.truths:
            if known == key:
                return answer
        answer = self._truth(card, t, counters=False)
        card.truths.insert(0, (key, answer))
        del card.truths[TRUTHS_KEPT:]
        return answer

    def _truth(self, card: Card, t: float, counters: bool) -> GpuTruth:
        model = card.model
        load = self.load(card, t)
        util = round(100 * load)
        ramp = memory_ramp(t)
        working = card.busy or bool(self.forced_load(card, t))
        used = int(min(model.memory_bytes - model.reserved_bytes,
                       (self.job_memory(card) * ramp if working else 0) + 4 * MIB + (card.index * 3 % 7) * MIB))
        power = self.power_w(card, t, load)
        reasons = self.event_reasons(card, load, power)
        sm_clock = int(model.sm_max_mhz * (0.97 if load else 0.15))
        if reasons & THROTTLING:
            sm_clock = int(model.sm_max_mhz * 0.78)
        # Idle cards drop their PCIe link to save power; busy ones train at their maximum.
        gen = card.pcie_gen_override or (model.pcie_max_gen if load else 1)
        width = card.pcie_width_override or model.pcie_max_width
        links = range(model.nvlinks)

        def total(name: str) -> int:
            return self.counter(card, name, t) if counters else 0
        return GpuTruth(
            util=util,
            mem_util=round(util * 0.55),
            used=used,
            reserved=model.reserved_bytes,
            total=model.memory_bytes,
            temperature=round(31 + 45 * (load if card.spin_power_w is None else 0.3) + card.index % 3
                              + card.temperature_offset),
            power_mw=round(power * 1000),
            power_limit_mw=round(model.power_limit_w * 1000),
            sm_clock=sm_clock,
            mem_clock=model.mem_max_mhz if load else int(model.mem_max_mhz * 0.1),
            fan=round(30 + 50 * load) if model.has_fan else 0,
            pstate=0 if load else model.idle_pstate,
            event_reasons=reasons,
            pcie_gen=gen,
            pcie_width=width,
            pcie_tx_bytes=total("pcie_tx"),
            pcie_rx_bytes=total("pcie_rx"),
            nvlink_tx_kib=tuple(total(f"nvl_tx{link}") for link in links),
            nvlink_rx_kib=tuple(total(f"nvl_rx{link}") for link in links),
            pcie_tx_rate=self.rate(card, "pcie_tx", t),
            pcie_rx_rate=self.rate(card, "pcie_rx", t),
            nvlink_tx_rate=NVLINK_KIB_PER_LOAD * load * 1024 if self.active_links(card) else 0.0,
            nvlink_rx_rate=NVLINK_KIB_PER_LOAD * load * 1024 if self.active_links(card) else 0.0,
            ecc_corrected=card.ecc_corrected if card.ecc_enabled else 0,
            ecc_uncorrected=card.ecc_uncorrected if card.ecc_enabled else 0,
            power_violation_ns=self.violation_ns(card, "power", t) if counters else 0,
            thermal_violation_ns=self.violation_ns(card, "thermal", t) if counters else 0,
            sm_activity=round(100 * load * 0.82, 2),
            sm_occupancy=round(100 * load * 0.41, 2),
            tensor_activity=round(100 * load * 0.37, 2),
            dram_bw_util=round(100 * load * 0.48, 2),
        )

    def process_memory(self, card: Card, process: DemoProcess, t: float) -> int | None:
        """What NVML lists as a process's memory: its share, never more than the card has in use."""
        if process.used_memory_bytes is None:
            return None
        if "compute" in process.kind:
            return min(process.used_memory_bytes, self.truth(card, t, counters=False).used)
        return process.used_memory_bytes
