"""A /proc tree on disk for the job probe: processes with their stat, cmdline, environ, threads (stat and
schedstat), children, io, smaps_rollup and fds, changed tick by tick by the test."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class Thread:
    tid: int
    name: str = "python3"
    state: str = "S"
    run_ns: int = 0
    wait_ns: int = 0
    slices: int = 0


@dataclass
class Proc:
    pid: int
    ppid: int
    name: str
    argv: tuple[str, ...]
    env: dict[str, str] = field(default_factory=dict)
    state: str = "S"
    ticks: int = 0
    start: int = 1000
    rss_pages: int = 25600
    major_faults: int = 0
    pss_kb: int | None = 50000
    read_bytes: int = 0
    exit_status: int = 0
    fds: tuple[str, ...] = ()
    threads: list[Thread] = field(default_factory=list)
    affinity: str = "0-3"
    cgroup: str = "0::/\n"  # /proc/PID/cgroup as the kernel writes it (probes/owners.py reads the owner from it)
    uid: int | None = None  # set: status's Uid line, and root and cwd links to / (the Flight Recorder reader's)


class FakeProc:
    """Writes only what changed since its last write: rewriting a file in place costs milliseconds on a loaded
    ext4 (the flush on truncate), and a test of many ticks rewrote every file of every process each tick."""

    def __init__(self, root: Path, uptime: float = 1000.0) -> None:
        self.root = root
        self.procs: dict[int, Proc] = {}
        self.uptime = uptime
        (root / "proc").mkdir(parents=True, exist_ok=True)
        self.pswpin = 0
        self._written: dict[Path, bytes | tuple[str, ...]] = {}

    def add(self, proc: Proc) -> Proc:
        if not proc.threads:
            proc.threads = [Thread(proc.pid, proc.name)]
        self.procs[proc.pid] = proc
        return proc

    def remove(self, pid: int) -> None:
        self.procs.pop(pid, None)

    def unlink(self, path: Path) -> None:
        """Remove one file the tree wrote (until the next write puts it back)."""
        path.unlink()
        self._written.pop(path, None)

    def write(self) -> None:
        import shutil

        proc_dir = self.root / "proc"
        for entry in proc_dir.iterdir():
            if entry.name.isdigit() and int(entry.name) not in self.procs:
                shutil.rmtree(entry)
                self._written = {path: v for path, v in self._written.items() if entry not in path.parents}
        self._put(proc_dir / "uptime", f"{self.uptime:.2f} 100.00\n")
        self._put(proc_dir / "vmstat", f"pgmajfault 0\npswpin {self.pswpin}\n")
        for proc in self.procs.values():
            self._write(proc)

    def _put(self, path: Path, data: str | bytes) -> None:
        raw = data.encode() if isinstance(data, str) else data
        if self._written.get(path) != raw:
            path.write_bytes(raw)
            self._written[path] = raw

    def _write(self, p: Proc) -> None:
        base = self.root / "proc" / str(p.pid)
        base.mkdir(exist_ok=True)
        fields = [p.state, str(p.ppid), "0", "0", "0", "0", "0", "0", "0", str(p.major_faults), "0",
                  str(p.ticks), "0", "0", "0", "20", "0", str(len(p.threads)), "0", str(p.start), "0",
                  str(p.rss_pages)] + ["0"] * 27 + [str(p.exit_status)]
        self._put(base / "stat", f"{p.pid} ({p.name}) {' '.join(fields)}\n")
        self._put(base / "cmdline", b"\0".join(a.encode() for a in p.argv) + b"\0")
        self._put(base / "environ", b"".join(f"{k}={v}\0".encode() for k, v in p.env.items()))
        uid = "" if p.uid is None else f"Uid:\t{p.uid}\t{p.uid}\t{p.uid}\t{p.uid}\n"
        self._put(base / "status", f"Name:\t{p.name}\n{uid}Cpus_allowed_list:\t{p.affinity}\n")
        if p.uid is not None:
            for name in ("root", "cwd"):
                if not (base / name).is_symlink():
                    (base / name).symlink_to("/")
        self._put(base / "io", f"rchar: 0\nwchar: 0\nread_bytes: {p.read_bytes}\nwrite_bytes: 0\n")
        if p.pss_kb is not None:
            self._put(base / "smaps_rollup", f"00400000-7fff [rollup]\nRss: 1 kB\nPss: {p.pss_kb} kB\n")
        self._put(base / "numa_maps", "7f00 default anon=3 N0=3\n")
        self._put(base / "cgroup", p.cgroup)
        fd_dir = base / "fd"
        if self._written.get(fd_dir) != p.fds:
            fd_dir.mkdir(exist_ok=True)
            for old in fd_dir.iterdir():
                old.unlink()
            for index, target in enumerate(p.fds):
                (fd_dir / str(index + 3)).symlink_to(target)
            self._written[fd_dir] = p.fds
        task = base / "task"
        task.mkdir(exist_ok=True)
        children = [str(c.pid) for c in self.procs.values() if c.ppid == p.pid]
        for t in p.threads:
            tdir = task / str(t.tid)
            tdir.mkdir(exist_ok=True)
            tfields = [t.state, str(p.ppid)] + ["0"] * 9 + [str(t.run_ns // 10_000_000), "0"] + ["0"] * 23 + ["0"]
            self._put(tdir / "stat", f"{t.tid} ({t.name}) {' '.join(tfields)}\n")
            self._put(tdir / "schedstat", f"{t.run_ns} {t.wait_ns} {t.slices}\n")
            self._put(tdir / "children", " ".join(children) + " " if t.tid == p.pid and children else "")
