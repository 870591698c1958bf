"""Issue 43: the fleet at a thousand hosts, against a real Prometheus (Debian's 2.42).

The Prometheus holds, per host, dcgm-exporter's default counters for 8 GPUs (NVIDIA/dcgm-exporter's
etc/default-counters.csv: its metric names and its labels gpu, UUID, pci_bus_id, device, modelName, Hostname,
DCGM_FI_DRIVER_VERSION), node-exporter's CPU seconds and uname, hwtop's own series on a fifth of the hosts
(findings, CPU, network ports), and 50 jobs x 256 ranks of `hwtop export --job` rank series.

Made with `promtool tsdb create-blocks-from openmetrics`, not a scrape farm: a farm of 2,200 targets would keep
this 2-core box busy scraping (and Python busy serving the pages) all through the measurement, which then measures
the farm as much as hwtop. Backfilled blocks cost once, before; Prometheus then only answers queries. The samples
run from 11 minutes before the start into the future (`--minutes`), so an instant query at "now" finds them for
that long; counters advance so that rate() and increase() have two samples in their windows.

Printed: hwtop's round end to end (fetch, parse, assemble, judge) beside Prometheus answering the same queries
(fetched concurrently, unparsed); the longest the UI's event loop was held while rounds arrived and a keypress's
redraw during a round (Pilot, headless, in a fresh process); that process's peak RSS; and `hwtop fleet
--prometheus URL --json`, whose hosts and GPUs are counted and checked (1,000 and 8,000).

    python -m benchmarks.fleet_scale [--hosts 1000] [--gpus 8] [--jobs 50] [--ranks 256] [--rounds 5] [--keep DIR]
                                     [--queries]
"""

from __future__ import annotations

import argparse
import asyncio
import concurrent.futures
import json
import os
import re
import resource
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HWTOP = [sys.executable, "-m", "hwtop"]

# dcgm-exporter's default counters (etc/default-counters.csv); those the fleet table reads get a sample a minute,
# the rest one every five minutes (held, as a real Prometheus holds them, but not asked for).
DCGM_READ = ("DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_FB_FREE", "DCGM_FI_DEV_GPU_TEMP",
             "DCGM_FI_DEV_POWER_USAGE")
DCGM_HELD = ("DCGM_FI_DEV_SM_CLOCK", "DCGM_FI_DEV_MEM_CLOCK", "DCGM_FI_DEV_MEMORY_TEMP",
             "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "DCGM_FI_DEV_PCIE_TX_THROUGHPUT", "DCGM_FI_DEV_PCIE_RX_THROUGHPUT",
             "DCGM_FI_DEV_PCIE_REPLAY_COUNTER", "DCGM_FI_DEV_MEM_COPY_UTIL", "DCGM_FI_DEV_ENC_UTIL",
             "DCGM_FI_DEV_DEC_UTIL", "DCGM_FI_DEV_XID_ERRORS", "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL",
             "DCGM_FI_DEV_VGPU_LICENSE_STATUS", "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS",
             "DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS", "DCGM_FI_DEV_ROW_REMAP_FAILURE")
PHASES = ("compute", "collective", "data", "other")  # the phases a training rank's stacks mostly fall in
CPUS = 32
MODES = ("idle", "user", "system", "iowait")
HWTOP_SHARE = 5  # every fifth host also runs `hwtop export`
MODEL = "NVIDIA H100 80GB HBM3"
FB_TOTAL_MIB = 81559


def host(index: int) -> str:
    return f"gpu{index:04d}"


class Writer:
    """OpenMetrics text, one family at a time (families must not interleave), samples in time order."""

    def __init__(self, path: Path, start: float, end: float) -> None:
        self.out = open(path, "w", buffering=1 << 20)  # noqa: SIM115 - closed in close()
        self.start, self.end = start, end
        self.samples = 0

    def stamps(self, every: float, since: float | None = None) -> list[float]:
        first = self.start if since is None else since
        count = int((self.end - first) // every) + 1
        return [first + i * every for i in range(count)]

    def family(self, name: str, series: list[tuple[str, object]], every: float, since: float | None = None) -> None:
        """`series`: (labels, value) where value is a number or a function of the time."""
        stamps = self.stamps(every, since)
        lines = []
        for labels, value in series:
            head = f"{name}{{{labels}}} "
            if callable(value):
                lines += [f"{head}{value(t):.3f} {t:.3f}\n" for t in stamps]
            else:
                lines += [f"{head}{value} {t:.3f}\n" for t in stamps]
            if len(lines) > 200_000:
                self.out.writelines(lines)
                self.samples += len(lines)
                lines = []
        self.out.writelines(lines)
        self.samples += len(lines)

    def close(self) -> None:
        self.out.write("# EOF\n")
        self.out.close()


def write_fleet(path: Path, hosts: int, gpus: int, jobs: int, ranks: int, now: float, minutes: float,
                held: bool = True, cpus: int = CPUS) -> int:
    """The whole fleet as OpenMetrics; returns the number of samples. `held` False leaves out the series nobody
    asks for (the other DCGM counters, the other CPU modes): a lighter Prometheus for the slow test."""
    out = Writer(path, now - 11 * 60, now + minutes * 60)
    names = [host(i) for i in range(hosts)]

    def gpu_labels(h: int, g: int) -> str:
        return (f'gpu="{g}",UUID="GPU-{h:08x}-{g:04x}-4000-8000-{h * 8 + g:012x}",'
                f'pci_bus_id="00000000:{0x18 + g:02X}:00.0",device="nvidia{g}",modelName="{MODEL}",'
                f'Hostname="{names[h]}",DCGM_FI_DRIVER_VERSION="550.90.07",'
                f'instance="{names[h]}:9400",job="dcgm"')

    def util(h: int, g: int) -> float:
        return 0.0 if (h + g) % 11 == 0 else float(40 + (h * 7 + g * 13) % 60)

    labels = [[gpu_labels(h, g) for g in range(gpus)] for h in range(hosts)]
    every = [(labels[h][g], h, g) for h in range(hosts) for g in range(gpus)]
    out.family("DCGM_FI_DEV_GPU_UTIL", [(lab, lambda t, h=h, g=g: util(h, g) + (t // 60) % 5)
                                        for lab, h, g in every], 60)
    used = {(h, g): 1000.0 + util(h, g) * 700 for _, h, g in every}
    out.family("DCGM_FI_DEV_FB_USED", [(lab, f"{used[h, g]:.0f}") for lab, h, g in every], 60)
    out.family("DCGM_FI_DEV_FB_FREE", [(lab, f"{FB_TOTAL_MIB - 545 - used[h, g]:.0f}") for lab, h, g in every], 60)
    out.family("DCGM_FI_DEV_GPU_TEMP", [(lab, 40 + (h + g) % 40) for lab, h, g in every], 60)
    out.family("DCGM_FI_DEV_POWER_USAGE", [(lab, f"{100 + util(h, g) * 5:.1f}") for lab, h, g in every], 60)
    for name in DCGM_HELD if held else ():
        out.family(name, [(lab, 0) for lab, _, _ in every], 300)
    node = [f'instance="{names[h]}:9100",job="node"' for h in range(hosts)]
    out.family("node_cpu_seconds_total", [(f'{node[h]},cpu="{c}",mode="idle"',
                                           lambda t, c=c: t * (0.4 + c % 3 * 0.1) - 1.7e9 * 0.3)
                                          for h in range(hosts) for c in range(cpus)], 60)
    for mode in MODES[1:] if held else ():
        out.family("node_cpu_seconds_total", [(f'{node[h]},cpu="{c}",mode="{mode}"', lambda t: t * 0.1 - 1.7e8)
                                              for h in range(hosts) for c in range(cpus)], 300)
    out.family("node_uname_info", [(f'{node[h]},domainname="(none)",machine="x86_64",nodename="{names[h]}",'
                                    f'release="6.1.0-28-amd64",sysname="Linux",version="#1 SMP Debian"', 1)
                                   for h in range(hosts)], 60)
    hw = [h for h in range(hosts) if h % HWTOP_SHARE == 0]
    hwl = {h: f'Hostname="{names[h]}",instance="{names[h]}:9500",job="hwtop"' for h in range(hosts)}
    out.family("hwtop_info", [(f'{hwl[h]},version="0.1",source="nvml"', 1) for h in hw], 60)
    out.family("hwtop_cpu_busy_percent", [(hwl[h], 20 + h % 50) for h in hw], 60)
    out.family("hwtop_finding", [(f'{hwl[h]},rule="{rule}",severity="{sev}",scope="{scope}"', 1)
                                 for h in hw for rule, sev, scope in _findings(h)], 60)
    out.family("hwtop_network_port_bytes_per_second",
               [(f'{hwl[h]},device="mlx5_{p}",port="1",kind="infiniband",direction="{d}"', 2e9 + h * 1e6)
                for h in hw for p in range(2) for d in ("rx", "tx")], 60)
    out.family("hwtop_network_port_line_ratio",
               [(f'{hwl[h]},device="mlx5_{p}",port="1",kind="infiniband"', 0.04) for h in hw for p in range(2)], 60)
    targets = [(n, "dcgm", 9400) for n in names] + [(n, "node", 9100) for n in names] + \
        [(names[h], "hwtop", 9500) for h in sorted(set(hw) | _job_hosts(hosts, jobs, ranks, gpus))]
    out.family("up", [(f'instance="{n}:{port}",job="{job}"', 1) for n, job, port in targets], 60)
    _write_jobs(out, names, jobs, ranks, gpus, hwl)
    out.close()
    return out.samples


def _findings(h: int) -> list[tuple[str, str, str]]:
    found = []
    if h % 7 == 0:
        found.append(("gpu-throttled", "warning", f"GPU{h % 8}"))
    if h % 23 == 0:
        found.append(("xid-error", "critical", "GPU0"))
    if h % 11 == 0:
        found.append(("gpu-starved", "warning", "GPU0-7"))
    return found


def _job_of_rank(job: int, rank: int, hosts: int, gpus: int) -> int:
    return (job * 32 + rank // gpus) % hosts


def _job_hosts(hosts: int, jobs: int, ranks: int, gpus: int) -> set[int]:
    return {_job_of_rank(j, r, hosts, gpus) for j in range(jobs) for r in range(ranks)}


def _write_jobs(out: Writer, names: list[str], jobs: int, ranks: int, gpus: int, hwl: dict[int, str]) -> None:
    """Rank counters every 30 s from two minutes back (increase over the 60 s window needs two samples); job 3
    has a straggler (rank 17 computes while the others wait in the collective)."""
    since = out.start + 9 * 60  # two minutes before now
    rank_labels = []
    for j in range(jobs):
        for r in range(ranks):
            h = _job_of_rank(j, r, len(names), gpus)
            rank_labels.append((j, r, f'job_name="pretrain-{j:02d}",rank="{r}",{hwl[h]}'))

    def rate(j: int, r: int, phase: str) -> float:
        straggler = j == 3 and r == 17
        shares = {"compute": 0.9 if straggler else 0.55, "collective": 0.02 if straggler else 0.35,
                  "data": 0.05, "other": 0.03}
        return shares[phase]

    out.family("hwtop_job_rank_seconds_total",
               [(f'{lab},phase="{phase}"', lambda t, j=j, r=r, p=phase: (t - out.start) * rate(j, r, p))
                for j, r, lab in rank_labels for phase in PHASES], 30, since)
    out.family("hwtop_job_rank_steps_total", [(lab, lambda t: (t - out.start) * 2.0) for _, _, lab in rank_labels],
               30, since)
    out.family("hwtop_job_rank_last_seen_timestamp_seconds", [(lab, lambda t: t) for _, _, lab in rank_labels], 30,
               since)
    out.family("hwtop_job_rank_info", [(f'{lab},pid="{1000 + r}",local_rank="{r % gpus}",gpu="{r % gpus}",'
                                        f'site="train.py:88 step"', 1) for _, r, lab in rank_labels], 60, since)
    hosts_of = sorted({(j, _job_of_rank(j, r, len(names), gpus)) for j, r, _ in rank_labels})
    out.family("hwtop_job_info", [(f'job_name="pretrain-{j:02d}",{hwl[h]},status="running"', 1) for j, h in hosts_of],
               60, since)


class Server:
    """Debian's prometheus over the backfilled blocks, on a free loopback port, scraping nothing."""

    def __init__(self, tsdb: Path) -> None:
        from tests.prometheus_rig import free_port

        self.port = free_port()
        config = tsdb.parent / "prometheus.yml"
        config.write_text(json.dumps({"global": {"scrape_interval": "1h"}, "scrape_configs": []}))
        self.log = open(tsdb.parent / "prometheus.log", "w")  # noqa: SIM115 - closed in close()
        self.process = subprocess.Popen(["prometheus", f"--config.file={config}", f"--storage.tsdb.path={tsdb}",
                                         "--storage.tsdb.retention.time=3650d", "--query.max-samples=200000000",
                                         f"--web.listen-address=127.0.0.1:{self.port}"],
                                        stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 300
        while True:
            try:
                with urllib.request.urlopen(f"{self.url}/-/ready", timeout=5) as answer:  # noqa: S310 - loopback
                    if answer.status == 200:
                        break
            except OSError:
                pass
            if time.monotonic() > deadline or self.process.poll() is not None:
                self.close()
                raise RuntimeError(f"prometheus did not start: see {tsdb.parent / 'prometheus.log'}")
            time.sleep(0.5)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def close(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(30)
        except subprocess.TimeoutExpired:
            self.process.kill()
        self.log.close()


_EXEC = re.compile(rb'"execTotalTime":([0-9.eE+-]+)')


def prometheus_seconds(body: bytes) -> float | None:
    """Prometheus's own time for a query (`stats=all`: data.stats.timings.execTotalTime, its queue included)."""
    found = _EXEC.search(body, max(0, len(body) - 4096))
    return float(found.group(1)) if found else None


class StatsGetter:
    """hwtop's own getter, each query asked with `stats=all`: the URLs a round asked and Prometheus's own time for
    each (the benchmark's probe, passed as PrometheusSource's getter; the product never asks for stats)."""

    def __init__(self) -> None:
        self.asked: list[tuple[str, float | None, int]] = []  # (url, Prometheus's seconds, bytes)
        self.lock = threading.Lock()

    def __call__(self, url: str, timeout: float, limit: int) -> bytes:
        from hwtop.fleet.http import get

        body = get(url + ("&" if "?" in url else "?") + "stats=all", timeout, limit, "application/json")
        with self.lock:
            self.asked.append((url, prometheus_seconds(body), len(body)))
        return body

    def take(self) -> list[tuple[str, float | None, int]]:
        with self.lock:
            asked, self.asked = self.asked, []
        return asked


def prometheus_round(urls: list[str]) -> float:
    """Prometheus answering one round's queries (the URLs hwtop asked), asked at once, bodies read, not parsed."""

    def fetch(address: str) -> int:
        with urllib.request.urlopen(address, timeout=60) as answer:  # noqa: S310 - loopback
            return len(answer.read())

    started = time.perf_counter()
    with concurrent.futures.ThreadPoolExecutor(max(1, len(urls))) as pool:
        sizes = list(pool.map(fetch, urls))
    return time.perf_counter() - started if sum(sizes) else float("nan")


def profile_queries(url: str) -> None:
    """Each query of a round asked alone (best of two), with Prometheus's own time beside the whole answer's: its
    evaluation (`stats=all`) and the time to the last byte, which adds writing the JSON; bytes and series."""
    from hwtop.fleet.job import job_queries, jobs_queries
    from hwtop.fleet.prometheus import queries

    asked = [*queries("", time.time(), 600.0, 30, True), *job_queries("pretrain-03", "", 60.0),
             *jobs_queries("", 60.0)]
    print(f"{'query':<38} {'Prometheus':>10} {'answered':>9} {'MB':>6} {'series':>7}")
    for query in asked:
        best: tuple[float, float | None, bytes] | None = None
        for _ in range(2):
            address = query.url(url) + ("&" if query.params else "?") + "stats=all"
            started = time.perf_counter()
            with urllib.request.urlopen(address, timeout=120) as answer:  # noqa: S310 - loopback
                body = answer.read()
            took = time.perf_counter() - started
            if best is None or took < best[0]:
                best = (took, prometheus_seconds(body), body)
        assert best is not None
        took, own, body = best
        series = json.loads(body).get("data", {}).get("result", ())
        print(f"{query.key:<38} {'' if own is None else f'{own * 1000:.0f} ms':>10} {took * 1000:>6.0f} ms "
              f"{len(body) / 1e6:>6.2f} {len(series) if isinstance(series, list) else '':>7}", flush=True)


ROUNDS = (("hosts", None, False), ("hosts + job list", None, True), ("hosts + one job", "pretrain-03", False))


def measure(url: str, rounds: int) -> dict[str, object]:
    """In a fresh process (its RSS is hwtop's): rounds timed, then the app under Pilot while rounds arrive."""
    from hwtop.fleet.session import FleetSession
    from hwtop.fleet.sources import PrometheusSource

    out: dict[str, object] = {}
    for name, job, jobs in ROUNDS:
        getter = StatsGetter()
        session = FleetSession(PrometheusSource(url, interval=2.0, timeout=30.0, getter=getter))
        session.ask(job, jobs)
        took, cpu, own, slowest, sizes, frame, urls = [], [], [], [], [], session.frame, []
        for _ in range(rounds):
            started, on_cpu = time.perf_counter(), time.thread_time()
            frame = session.round()  # on this thread, as on the worker: fetch (other threads), parse, assemble
            took.append(time.perf_counter() - started)
            cpu.append(time.thread_time() - on_cpu)
            asked = getter.take()
            seconds = [s for _, s, _ in asked if s is not None]
            own.append(sum(seconds))
            slowest.append(max(seconds, default=0.0))
            sizes.append(sum(size for _, _, size in asked))
            urls = [u for u, _, _ in asked]
        session.close()
        out[name] = {"hwtop_round_s": took, "hwtop_cpu_s": cpu, "prometheus_sum_s": own,
                     "prometheus_slowest_s": slowest, "bytes": sizes, "queries": len(urls), "urls": urls,
                     "hosts": len(frame.hosts), "gpus": frame.summary.gpus, "problem": frame.problem,
                     "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                     "jobs": None if frame.jobs is None else len(frame.jobs.jobs),
                     "verdict": None if frame.job is None or frame.job.verdict is None else frame.job.verdict.named}
    out["ui"] = asyncio.run(_ui(url, rounds))
    out["peak_rss_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return out


async def _ui(url: str, rounds: int) -> dict[str, object]:
    """The app's event loop while the session's worker reads rounds: the longest gap between ticks of a 5 ms
    heartbeat (how long a key would wait to be read), and `s` pressed while a round is being read until the
    header shows the new sort. The collector's passes are timed too (gc.callbacks), whichever thread ran them."""
    import gc

    from hwtop.fleet import sources
    from hwtop.fleet.sources import PrometheusSource
    from hwtop.tui.fleet.app import FleetApp
    from tests.small_screen import screen_lines

    reading = threading.Event()
    real_read = PrometheusSource.read
    passes: list[tuple[int, float]] = []
    began: list[float] = [0.0]

    def timed(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            began[0] = time.perf_counter()
        else:
            passes.append((info["generation"], time.perf_counter() - began[0]))

    def read(self: PrometheusSource, ask: sources.Ask) -> sources.Round:
        reading.set()
        try:
            return real_read(self, ask)
        finally:
            reading.clear()

    PrometheusSource.read = read  # type: ignore[method-assign]  # the benchmark's own probe, not the product's
    app = FleetApp(PrometheusSource(url, interval=0.5, timeout=30.0))
    gaps: list[float] = []
    keys: list[float] = []
    async with app.run_test(size=(160, 50)) as pilot:
        while app.frame.seq == 0:
            await pilot.pause(0.05)
        gc.callbacks.append(timed)
        stop = time.monotonic()
        seen = app.frame.seq
        last, last_cpu = time.perf_counter(), time.thread_time()
        own: list[float] = []  # the UI thread's own CPU in each gap: its work, not a wait for the lock or a CPU
        give_up = time.monotonic() + 60 * rounds
        while (app.frame.seq < seen + rounds or len(keys) < rounds) and time.monotonic() < give_up:
            await asyncio.sleep(0.005)
            now, cpu = time.perf_counter(), time.thread_time()
            gaps.append(now - last - 0.005)
            own.append(cpu - last_cpu)
            last, last_cpu = now, cpu
            if reading.is_set() and len(keys) < rounds and time.monotonic() > stop:
                started = time.perf_counter()
                app.simulate_key("s")  # findings first → by host, as a key from the terminal arrives
                while not any("HOST ▼" in line for line in screen_lines(app)[:6]):
                    await asyncio.sleep(0.001)
                keys.append(time.perf_counter() - started)
                for _ in range(4):  # round the sorts back to findings first
                    await pilot.press("s")
                stop = time.monotonic() + 0.3
                last, last_cpu = time.perf_counter(), time.thread_time()
        gc.callbacks.remove(timed)
        await pilot.press("q")
    longest = max(range(len(gaps)), key=gaps.__getitem__)
    return {"max_loop_block_ms": 1000 * max(gaps), "p99_loop_block_ms": 1000 * sorted(gaps)[int(len(gaps) * 0.99)],
            "longest_gap_own_cpu_ms": 1000 * own[longest], "max_own_cpu_ms": 1000 * max(own),
            "keypress_redraw_ms": [1000 * k for k in keys], "heartbeats": len(gaps),
            "gc_max_ms": {str(g): 1000 * max((s for gen, s in passes if gen == g), default=0.0) for g in (0, 1, 2)},
            "gc_passes": len(passes)}


def json_command(url: str) -> dict[str, object]:
    """`hwtop fleet --prometheus URL --json`, its own peak RSS (wait4: this child's alone)."""
    started = time.perf_counter()
    with tempfile.TemporaryFile() as out:
        child = subprocess.Popen([*HWTOP, "fleet", "--prometheus", url, "--timeout", "30", "--json"], stdout=out,
                                 stderr=subprocess.DEVNULL, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)})
        try:
            _, status, usage = os.wait4(child.pid, 0)
        finally:
            if child.poll() is None:  # interrupted: the child goes too
                child.kill()
                child.wait()
        child.returncode = os.waitstatus_to_exitcode(status)
        took = time.perf_counter() - started
        out.seek(0)
        answer = json.loads(out.read())
    return {"exit": child.returncode, "wall_s": took, "hosts": len(answer["hosts"]),
            "gpus": sum(h["gpus"] for h in answer["hosts"]), "jobs": len(answer.get("jobs") or []),
            "peak_rss_mib": usage.ru_maxrss / 1024, "round_s": answer["round_s"]}


def build(workdir: Path, args: argparse.Namespace) -> Path:
    """The blocks, and the time their samples end (kept beside them, so `--keep` knows when they are too old)."""
    data, tsdb, now = workdir / "fleet.om", workdir / "tsdb", time.time()
    started = time.perf_counter()
    samples = write_fleet(data, args.hosts, args.gpus, args.jobs, args.ranks, now, args.minutes)
    print(f"wrote {samples:,} samples ({data.stat().st_size >> 20} MiB) in {time.perf_counter() - started:.0f} s",
          flush=True)
    started = time.perf_counter()
    subprocess.run(["promtool", "tsdb", "create-blocks-from", "openmetrics", str(data), str(tsdb)], check=True,
                   stdout=subprocess.DEVNULL)
    data.unlink()
    (workdir / "ends_at").write_text(f"{now + args.minutes * 60:.0f}\n")
    print(f"promtool made the blocks in {time.perf_counter() - started:.0f} s", flush=True)
    return tsdb


MEASURE_S = 240  # the measurement's longest run on a quiet box, with room: the data must reach past it


def _usable(workdir: Path) -> bool:
    """Blocks kept by `--keep` whose samples still reach past the measurement."""
    try:
        ends = float((workdir / "ends_at").read_text())
    except (OSError, ValueError):
        return False
    return (workdir / "tsdb").is_dir() and ends > time.time() + MEASURE_S


def _interrupted(signum: int, frame: object) -> None:
    raise KeyboardInterrupt  # SIGTERM as Ctrl-C: the finally clauses stop Prometheus and remove the data


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--hosts", type=int, default=1000)
    parser.add_argument("--gpus", type=int, default=8)
    parser.add_argument("--jobs", type=int, default=50)
    parser.add_argument("--ranks", type=int, default=256)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--minutes", type=float, default=12.0, help="how long the data reaches past now")
    parser.add_argument("--keep", type=Path, help="build the Prometheus data here once and reuse it while it lasts")
    parser.add_argument("--queries", action="store_true", help="also each query of a round alone, with its cost")
    parser.add_argument("--measure", metavar="URL", help=argparse.SUPPRESS)  # the measuring child
    args = parser.parse_args()
    if args.measure:
        print(json.dumps(measure(args.measure, args.rounds)))
        return 0
    if shutil.which("prometheus") is None or shutil.which("promtool") is None:
        print("needs Debian's prometheus package (prometheus and promtool)", file=sys.stderr)
        return 2
    began, load = time.perf_counter(), os.getloadavg()
    print(f"load average at the start: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} ({os.cpu_count()} CPUs)", flush=True)
    signal.signal(signal.SIGTERM, _interrupted)
    signal.signal(signal.SIGINT, _interrupted)  # also where a shell started it with SIGINT ignored (in the background)
    workdir = args.keep or Path(tempfile.mkdtemp(prefix="hwtop-fleet-scale-"))
    server: Server | None = None
    try:
        workdir.mkdir(parents=True, exist_ok=True)
        if not _usable(workdir):
            shutil.rmtree(workdir / "tsdb", ignore_errors=True)
            build(workdir, args)
        server = Server(workdir / "tsdb")
        if args.queries:
            profile_queries(server.url)
        child = subprocess.run([sys.executable, "-m", "benchmarks.fleet_scale", "--measure", server.url,
                                "--rounds", str(args.rounds)], capture_output=True, text=True, cwd=ROOT,
                               env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=1800)
        if child.returncode != 0:
            print(child.stderr, file=sys.stderr)
            return 1
        figures = json.loads(child.stdout.strip().splitlines()[-1])
        for name, _, _ in ROUNDS:  # Prometheus alone, from this process: its bodies are not hwtop's RSS
            row = figures[name]
            row["prometheus_round_s"] = [prometheus_round(row["urls"]) for _ in range(args.rounds)]
        command = json_command(server.url)
    except KeyboardInterrupt:
        print("interrupted: Prometheus stopped, its data removed", file=sys.stderr)
        return 130
    finally:
        if server is not None:
            server.close()
        if args.keep is None:
            shutil.rmtree(workdir, ignore_errors=True)
    load = os.getloadavg()
    report(figures, command, args)
    print(f"load average at the end: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}; whole run "
          f"{time.perf_counter() - began:.0f} s")
    return 0 if command["hosts"] == args.hosts and command["gpus"] == args.hosts * args.gpus else 1


def _ms(seconds: list[float]) -> str:
    return f"{statistics.median(seconds):.2f} / {max(seconds):.2f}"


def report(figures: dict[str, object], command: dict[str, object], args: argparse.Namespace) -> None:
    print(f"python -m benchmarks.fleet_scale --hosts {args.hosts} --gpus {args.gpus} --jobs {args.jobs} "
          f"--ranks {args.ranks} --rounds {args.rounds}")
    print("seconds, median / max of the rounds (goal: a round <= 2 s end to end)")
    print(f"{'round':<17} {'hwtop round':>12} {'its CPU':>12} {'Prom. own sum':>14} {'Prom. slowest':>14} "
          f"{'Prom. alone':>12} {'queries':>7} {'MB':>6}  hosts  GPUs")
    for name, _, _ in ROUNDS:
        row = figures[name]
        assert isinstance(row, dict)
        print(f"{name:<17} {_ms(row['hwtop_round_s']):>12} {_ms(row['hwtop_cpu_s']):>12} "
              f"{_ms(row['prometheus_sum_s']):>14} {_ms(row['prometheus_slowest_s']):>14} "
              f"{_ms(row['prometheus_round_s']):>12} {row['queries']:>7} {statistics.median(row['bytes']) / 1e6:>6.1f}"
              f"  {row['hosts']:>5} {row['gpus']:>5}"
              + (f"  jobs {row['jobs']}" if row["jobs"] is not None else "")
              + (f"  verdict: {row['verdict']}" if row["verdict"] else "")
              + (f"  problem: {row['problem']}" if row["problem"] else "")
              + f"  (peak RSS so far {row['peak_rss_mib']:.0f} MiB)")
    print("  Prom. own: its queries' execTotalTime (stats=all), summed and the slowest; Prom. alone: the last round's "
          "queries asked at once from another process, bodies read, not parsed")
    ui = figures["ui"]
    assert isinstance(ui, dict)
    keys = ui["keypress_redraw_ms"]
    print(f"UI event loop held, max {ui['max_loop_block_ms']:.0f} ms, p99 {ui['p99_loop_block_ms']:.0f} ms over "
          f"{ui['heartbeats']} heartbeats while rounds arrived (goal < 50 ms); the UI thread's own CPU in that gap "
          f"{ui['longest_gap_own_cpu_ms']:.0f} ms, in any gap at most {ui['max_own_cpu_ms']:.0f} ms (the rest is "
          "waiting for the interpreter lock or a CPU); the collector's longest pass by "
          f"generation {', '.join(f'{g}: {ms:.0f}' for g, ms in ui['gc_max_ms'].items())} ms "
          f"({ui['gc_passes']} passes)")
    print(f"keypress to redraw during a round: {', '.join(f'{k:.0f}' for k in keys)} ms (goal < 100 ms)")
    print(f"peak RSS of the measuring process (app, session, rounds): {figures['peak_rss_mib']:.0f} MiB (goal <= 300)")
    print(f"hwtop fleet --prometheus URL --json: exit {command['exit']}, {command['hosts']} hosts, "
          f"{command['gpus']} GPUs, {command['jobs']} jobs, round {command['round_s']:.2f} s, whole command "
          f"{command['wall_s']:.1f} s, peak RSS {command['peak_rss_mib']:.0f} MiB")


if __name__ == "__main__":
    sys.exit(main())
