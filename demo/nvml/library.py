"""A fake NVML C library: the symbols nvidia-ml-py looks up in libnvidia-ml.so.1, as C-callable function
pointers with nvml.h's signatures, driven by simulated cards.

`FakeNvmlLibrary(profile)` is the shared object and its world. `library.pynvml` is the installed nvidia-ml-py
bound to it (demo/nvml/binding.py): hand that to the probe, and every call goes through the real bindings into
these functions, which write nvml.h's structs at the addresses the bindings pass and return nvmlReturn_t codes.

Beyond answering, it models what breaks monitors on real machines: a driver branch's missing symbols and
fields (branches.py), errors injected per call and per GPU, state that changes between ticks (MIG, ECC,
processes, a GPU falling off the bus, the driver going away), counters that wrap, field values sampled a
moment before they are read, and each call's cost (latency.py), added up per calling thread.
"""

from __future__ import annotations

import ctypes
import threading
import time
import types
import weakref
from collections import Counter, deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple, Protocol

from hwtop.demo.nvml import abi
from hwtop.demo.nvml.branches import DriverBranch, branch_of
from hwtop.demo.nvml.latency import cost_s
from hwtop.demo.nvml.symbols import Symbols
from hwtop.demo.nvml.world import EPOCH_S, EVENT, Card, EventQueue, GpuTruth, Target, World
from hwtop.demo.profiles import DemoProcess, DemoProfile, get_profile

# pynvml-level names a test may use for faults, and the C symbols behind them.
ALIASES = {"nvmlInit": ("nvmlInitWithFlags", "nvmlInit_v2"), "nvmlDeviceGetCount": ("nvmlDeviceGetCount_v2",),
           "nvmlDeviceGetHandleByIndex": ("nvmlDeviceGetHandleByIndex_v2",),
           "nvmlDeviceGetPciInfo": ("nvmlDeviceGetPciInfo_v3",)}
NO_INIT_NEEDED = frozenset({"nvmlInitWithFlags", "nvmlInit_v2", abi.ERROR_STRING})
NVLINK_ERROR_KINDS = {"replay": abi.NVLINK_ERROR_DL_REPLAY, "recovery": abi.NVLINK_ERROR_DL_RECOVERY,
                      "crc_flit": abi.NVLINK_ERROR_DL_CRC_FLIT, "crc_data": abi.NVLINK_ERROR_DL_CRC_DATA}


@dataclass(slots=True)
class Fault:
    code: int
    gpu: int | None
    remaining: int | None
    phase: str | None  # "size": only the size query of a size-then-fill call; "fill": only the fill
    after: int = 0  # let this many matching calls through first


class CallRecord(NamedTuple):  # one a call: a tuple is made several times faster than a frozen dataclass
    symbol: str
    gpu: int | None
    code: int
    cost_s: float
    thread: int


class _Symbols(Protocol):
    def function_pointer(self, symbol: str) -> Any: ...


class SharedObject:
    """What pynvml's CDLL("libnvidia-ml.so.1") returns: attribute lookup finds a symbol or raises AttributeError
    (pynvml turns that into FUNCTION_NOT_FOUND), as for a real shared object."""

    def __init__(self, library: _Symbols) -> None:
        self._library = library

    def __getattr__(self, name: str) -> Any:
        return self._library.function_pointer(name)


class FakeNvmlLibrary:
    def __init__(
        self,
        profile: DemoProfile | str,
        seed: int = 0,
        clock: Callable[[], float] = time.monotonic,
        driver_version: str | None = None,
        library_missing: bool = False,
        driver_not_loaded: bool = False,
    ) -> None:
        self.profile = get_profile(profile) if isinstance(profile, str) else profile
        self.driver_version = driver_version or self.profile.driver_version
        self.branch: DriverBranch = branch_of(self.driver_version)
        self.seed = seed
        self._clock = clock
        self._start = clock()
        self.world = World(self.profile, seed)
        self.library_missing = library_missing
        self.driver_loaded = not driver_not_loaded
        self.initialized = 0
        self.calls: Counter[str] = Counter()  # C symbol -> calls
        self.field_requests: Counter[tuple[int, int, int]] = Counter()  # (gpu, fieldId, scopeId) -> requests
        self.log: deque[CallRecord] = deque(maxlen=100_000)
        self.internal_errors: list[str] = []  # exceptions inside the fake (a bug here, never a driver answer)
        self.value_types: dict[int, int] = {}  # fieldId -> nvmlValueType_t override (default: per field)
        self.hidden_symbols: set[str] = set()
        self.counter_origin = 0  # added to every byte counter before it wraps: start near 2**64 to test wrapping
        self.timeline: list[tuple[float, Callable[[FakeNvmlLibrary], None]]] = []  # scenario events, by elapsed s
        self._spent: dict[int, float] = {}
        self._faults: dict[str, list[Fault]] = {}
        self._pointers: dict[str, Any] = {}
        self._keep: list[Any] = []  # buffers whose addresses were handed out
        self._handles: dict[int, Target] = {}
        self._handle_of: dict[Target, int] = {}
        self.event_sets: dict[int, EventQueue] = {}  # live event set address -> the GPUs it watches, its events
        self.gpm_samples: dict[int, tuple[int, float] | None] = {}  # live sample address -> (gpu, time) of last get
        self._lock = threading.RLock()
        self._symbols = Symbols(self)
        self._pynvml: weakref.ref[types.ModuleType] | None = None

    # ----- the bindings -----

    @property
    def pynvml(self) -> types.ModuleType:
        """The installed nvidia-ml-py, loading this library instead of libnvidia-ml.so.1. The bindings hold
        the library; the library holds them weakly (binding.py pools them): keep the module while using it."""
        module = self._pynvml() if self._pynvml is not None else None
        if module is None or getattr(module, "_hwtop_owner", None) is not self:
            from hwtop.demo.nvml.binding import load_pynvml

            module = load_pynvml(self._load, self)
            self._pynvml = weakref.ref(module)
        return module

    def _load(self, name: str) -> SharedObject:
        if self.library_missing or "nvidia-ml" not in name:
            raise OSError(f"{name}: cannot open shared object file: No such file or directory")
        return SharedObject(self)

    def exported(self, symbol: str) -> bool:
        return ((symbol in abi.SIGNATURES or symbol == abi.ERROR_STRING)
                and symbol not in self.branch.missing_symbols and symbol not in self.hidden_symbols)

    def function_pointer(self, symbol: str) -> Any:
        if not self.exported(symbol):
            raise AttributeError(f"undefined symbol: {symbol}")
        pointer = self._pointers.get(symbol)
        if pointer is None:
            implementation = getattr(self._symbols, symbol)
            library = weakref.ref(self)  # the pointer lives in the bindings' cache: no cycle back to us

            def entry(*args: Any, _symbol: str = symbol, _impl: Callable[..., int] = implementation) -> int:
                alive = library()
                return abi.UNINITIALIZED if alive is None else alive._dispatch(_symbol, _impl, args)

            pointer = self._pointers[symbol] = abi.prototype(symbol)(entry)
        return pointer

    # ----- time -----

    def elapsed(self) -> float:
        return self._clock() - self._start

    def now(self) -> float:
        """The world's time (seconds since the library was made), after running any scenario event that is due."""
        t = self.elapsed()
        while self.timeline and self.timeline[0][0] <= t:
            _, event = self.timeline.pop(0)
            event(self)
        return t

    @staticmethod
    def timestamp_us(t: float) -> int:
        return int(round((EPOCH_S + t) * 1e6))

    def at(self, seconds: float, event: Callable[[FakeNvmlLibrary], None]) -> None:
        """Run `event(self)` once the world's time reaches `seconds` (scenarios: MIG on at 1 s, ...)."""
        self.timeline.append((seconds, event))
        self.timeline.sort(key=lambda item: item[0])

    # ----- accounting -----

    def spent_s(self, thread: int | None = None) -> float:
        """Modelled seconds spent in this library: by one thread (its ident), or by all."""
        if thread is None:
            return sum(self._spent.values())
        return self._spent.get(thread, 0.0)

    def reset_accounting(self) -> None:
        self._spent.clear()
        self.calls.clear()
        self.field_requests.clear()
        self.log.clear()

    # ----- dispatch: every C call comes through here -----

    def _dispatch(self, symbol: str, implementation: Callable[..., int], args: tuple[Any, ...]) -> int:
        with self._lock:
            thread = threading.get_ident()
            fields = args[1] if symbol == "nvmlDeviceGetFieldValues" else 0
            cost = cost_s(symbol, int(fields or 0))
            self.calls[symbol] += 1
            self._spent[thread] = self._spent.get(thread, 0.0) + cost
            target = None
            try:
                code, target = self._gate(symbol, args)
                if code == abi.SUCCESS:
                    code = implementation(*args) if target is None else implementation(target, *args[1:])
            except Exception as error:  # noqa: BLE001 - a bug in the fake must not pass as NVML_SUCCESS
                self.internal_errors.append(f"{symbol}: {type(error).__name__}: {error}")
                code = abi.UNKNOWN
            self.log.append(CallRecord(symbol, target.gpu if target else None, code, cost, thread))
            return code

    def _gate(self, symbol: str, args: tuple[Any, ...]) -> tuple[int, Target | None]:
        """The checks every real entry point makes before answering: initialised, driver there, a valid handle,
        the GPU still on the bus; plus the faults a test injected."""
        if symbol not in NO_INIT_NEEDED:
            if not self.driver_loaded and symbol != "nvmlShutdown":
                return abi.DRIVER_NOT_LOADED, None
            if not self.initialized:
                return abi.UNINITIALIZED, None
        self.now()
        target = None
        gpu = None
        if symbol == "nvmlDeviceGetHandleByIndex_v2":
            gpu = int(args[0])
            if gpu >= len(self.world.cards):
                return abi.INVALID_ARGUMENT, None
        elif _takes_handle(symbol):
            target = self._handles.get(int(args[0] or 0))
            if target is None:
                return abi.INVALID_ARGUMENT, None
            gpu = target.gpu
        if self._faults:  # only a test injects faults
            phase = None
            buffer = _SIZED_BUFFER.get(symbol)
            if buffer is None:
                buffer = _SIZED_BUFFER[symbol] = _sized_buffer(symbol)
            if buffer >= 0:
                phase = "fill" if args[buffer] else "size"
            code = self._fault(symbol, gpu, phase)
            if code != abi.SUCCESS:
                return code, target
        if gpu is not None and self.world.cards[gpu].lost:
            return abi.GPU_IS_LOST, target
        return abi.SUCCESS, target

    def _fault(self, symbol: str, gpu: int | None, phase: str | None) -> int:
        for name, faults in self._faults.items():
            if not (symbol == name or symbol in ALIASES.get(name, ()) or symbol.startswith(name + "_v")):
                continue
            for fault in faults:
                if fault.gpu not in (None, gpu) or fault.phase not in (None, phase):
                    continue
                if fault.after > 0:
                    fault.after -= 1
                    continue
                if fault.remaining is not None:
                    if fault.remaining <= 0:
                        continue
                    fault.remaining -= 1
                return fault.code
        return abi.SUCCESS

    # ----- handles and buffers -----

    def handle(self, target: Target) -> int:
        address = self._handle_of.get(target)
        if address is None:
            buffer = ctypes.create_string_buffer(16)  # an opaque struct the caller never reads
            self._keep.append(buffer)
            address = ctypes.addressof(buffer)
            self._handles[address] = target
            self._handle_of[target] = address
        return address

    def target_of(self, address: int) -> Target | None:
        return self._handles.get(address)

    def keep(self, buffer: Any) -> None:
        """Keep a buffer whose address was handed out alive as long as the library."""
        self._keep.append(buffer)

    def card(self, target: Target) -> Card:
        return self.world.cards[target.gpu]

    # ----- control surface for tests, demos and scenarios (not part of NVML) -----

    def fail(self, symbol: str, code: int, gpu: int | None = None, times: int | None = None,
             phase: str | None = None, after: int = 0) -> None:
        """Make `symbol` (a C symbol, or a pynvml name such as nvmlInit) return `code`: on one GPU or all,
        always or `times` times (after letting `after` calls through), on every call or only the size query /
        fill of a size-then-fill pair."""
        self._faults.setdefault(symbol, []).append(Fault(code, gpu, times, phase, after))

    def remove_symbols(self, *symbols: str) -> None:
        """Export fewer symbols than the branch does (an older driver: R450 lacks the _v2 process queries)."""
        self.hidden_symbols.update(symbols)

    def lose_gpu(self, index: int, lost: bool = True) -> None:
        """The GPU falls off the bus (every call on it: GPU_IS_LOST), or comes back after a reset."""
        self.world.cards[index].lost = lost

    def unload_driver(self) -> None:
        self.driver_loaded = False

    def load_driver(self) -> None:
        self.driver_loaded = True

    def install_library(self) -> None:
        """libnvidia-ml.so.1 appears (a container whose driver files are mounted after start)."""
        self.library_missing = False

    def set_load(self, index: int, fraction: float | None) -> None:
        """Force a GPU's load from now on (None: back to the profile's rhythm)."""
        self.world.cards[index].load_changes.append((self.elapsed(), fraction))

    def force_reasons(self, index: int, *names: str) -> None:
        self.world.cards[index].forced_reasons = sum(EVENT[n] for n in names)

    def set_temperature_offset(self, index: int, degrees: float) -> None:
        self.world.cards[index].temperature_offset = degrees

    def set_spin_power(self, index: int, watts: float | None) -> None:
        """Busy at `watts`: utilization stays high while the SMs only poll (None: power follows the load)."""
        self.world.cards[index].spin_power_w = watts

    def set_pcie_link(self, index: int, gen: int | None, width: int | None) -> None:
        card = self.world.cards[index]
        card.pcie_gen_override, card.pcie_width_override = gen, width

    def report_xid(self, index: int, xid: int) -> None:
        """The driver reports Xid `xid` on GPU `index`: every event set watching it gets the event."""
        for queue in self.event_sets.values():
            if index in queue.gpus:
                queue.events.append((index, xid))

    def set_pcie_replays(self, index: int, count: int) -> None:
        self.world.cards[index].pcie_replays = count

    def set_ecc(self, index: int, corrected: int, uncorrected: int) -> None:
        card = self.world.cards[index]
        card.ecc_corrected, card.ecc_uncorrected = corrected, uncorrected

    def set_row_remap(self, index: int, correctable: int | None = None, uncorrectable: int | None = None,
                      pending: bool | None = None, failed: bool | None = None) -> None:
        """The card's row remapper (HBM cards): rows remapped after correctable and uncorrectable errors, a remap
        waiting for a reset, a remap that failed; what is not given stays as it was."""
        card = self.world.cards[index]
        rows = card.remapped_rows
        card.remapped_rows = (rows[0] if correctable is None else correctable,
                              rows[1] if uncorrectable is None else uncorrectable)
        card.remap_pending = card.remap_pending if pending is None else pending
        card.remap_failed = card.remap_failed if failed is None else failed

    def add_nvlink_errors(self, index: int, link: int, kind: str, count: int) -> None:
        """`count` more NVLink errors of `kind` (replay, recovery, crc_flit, crc_data) on one link of a card."""
        counter = NVLINK_ERROR_KINDS[kind]
        errors = self.world.cards[index].nvlink_errors
        errors[(link, counter)] = errors.get((link, counter), 0) + count

    def reset_nvlink_errors(self, index: int) -> None:
        """The driver reloaded (or the GPU was reset): every NVLink error count of the card back to 0."""
        self.world.cards[index].nvlink_errors.clear()

    def set_ecc_mode(self, index: int, enabled: bool) -> None:
        self.world.cards[index].ecc_enabled = enabled

    def set_mig(self, index: int, enabled: bool) -> None:
        self.world.cards[index].mig = enabled

    def set_link_down(self, index: int, link: int) -> None:
        self.world.cards[index].links_down.add(link)

    def set_link_shares(self, index: int, shares: tuple[float, ...]) -> None:
        self.world.cards[index].link_shares = shares

    def set_common_ancestor(self, a: int, b: int, level: int) -> None:
        self.world.cards[a].ancestors[b] = level
        self.world.cards[b].ancestors[a] = level

    def set_field_lag(self, index: int, seconds: float) -> None:
        """The driver's cached field values are `seconds` old when read (their timestamp says so)."""
        self.world.cards[index].field_lag_s = seconds

    def add_process(self, process: DemoProcess) -> None:
        self.world.cards[process.gpu].processes.append(process)

    def remove_process(self, pid: int) -> None:
        for card in self.world.cards:
            card.processes[:] = [p for p in card.processes if p.pid != pid]

    def set_sample_quirk(self, index: int, quirk: str, on: bool = True) -> None:
        """Per-process utilization as some drivers give it: "stale" (samples older than asked for, newest
        first) or "overshoot" (an SM figure above 100)."""
        quirks = self.world.cards[index].sample_quirks
        quirks.add(quirk) if on else quirks.discard(quirk)

    def truth(self, index: int) -> GpuTruth:
        """The card's state at this instant, in NVML's units."""
        return self.world.truth(self.world.cards[index], self.elapsed())


def _sized_buffer(symbol: str) -> int:
    """Which argument of a size-then-fill call is its buffer (NULL on the size query), or -1."""
    if symbol.startswith(("nvmlDeviceGetComputeRunningProcesses", "nvmlDeviceGetGraphicsRunningProcesses",
                          "nvmlDeviceGetProcessUtilization")):
        return 2 if "Utilization" not in symbol else 1
    return -1


_SIZED_BUFFER: dict[str, int] = {}  # symbol -> _sized_buffer(symbol), worked out once (every call asks it)
_HANDLED: dict[str, bool] = {}  # symbol -> takes_handle(symbol), likewise


def _takes_handle(symbol: str) -> bool:
    known = _HANDLED.get(symbol)
    if known is None:
        known = _HANDLED[symbol] = takes_handle(symbol)
    return known


def takes_handle(symbol: str) -> bool:
    """Whether the symbol's first argument is an nvmlDevice_t."""
    return (symbol.startswith("nvmlDevice") and symbol not in ("nvmlDeviceGetCount_v2",
                                                                "nvmlDeviceGetHandleByIndex_v2")) or symbol in (
        "nvmlGpmSampleGet", "nvmlGpmQueryDeviceSupport")
