"""`hwtop export --listen 127.0.0.1:9400`: serve /metrics for Prometheus from this machine, a demo profile or a
recording. Nothing listens unless this command runs, and then on 127.0.0.1 unless another address is given."""

from __future__ import annotations

import argparse
import ipaddress
import os
import signal
import sys
from typing import TYPE_CHECKING

from hwtop.cli.machine import open_sampler
from hwtop.cli.options import Invocation, add_job_options, add_source_options, source_config
from hwtop.session.sources import JobRefused

if TYPE_CHECKING:
    from hwtop.exporter.server import MetricsServer
    from hwtop.session.sampler import Sampler
    from hwtop.session.session import SnapshotSource

DEFAULT_LISTEN = "127.0.0.1:9400"


def listen_address(text: str) -> tuple[str, int]:
    """HOST:PORT, [IPv6]:PORT or :PORT (which still means 127.0.0.1, never every interface)."""
    host, sep, port = text.rpartition(":")
    if not sep:
        raise argparse.ArgumentTypeError(f"expected HOST:PORT, got {text!r}")
    host = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    try:
        number = int(port)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a port number: {port!r}") from None
    if not 0 < number < 65536:
        raise argparse.ArgumentTypeError(f"port must be 1-65535, got {number}")
    return host or "127.0.0.1", number


def is_loopback(host: str) -> bool:
    """127.0.0.0/8, ::1 and `localhost`; a name that might resolve elsewhere is not."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def exposure_warning(host: str, port: int) -> str | None:
    """The line printed when the exporter listens beyond this machine."""
    if is_loopback(host):
        return None
    shown = f"[{host}]" if ":" in host else host
    return (f"hwtop: warning: listening on {shown}:{port}, beyond this machine, with no authentication: anyone "
            "who can reach the port reads this host's metrics (its name, GPUs, job throughput and advice findings); "
            "keep 127.0.0.1 or firewall the port to your Prometheus server")


def add_options(export: argparse.ArgumentParser) -> None:
    export.description = (
        "Serve GET /metrics: GPU series named as NVIDIA's dcgm-exporter names them (DCGM_FI_DEV_*, labels gpu, UUID, "
        "pci_bus_id, device, modelName, Hostname) and hwtop_* series for cores, NUMA memory, disks, the workload and "
        "the active advice findings. Scrapes read the latest snapshot. With --pid/--job, the job is focused as the "
        "monitor focuses it and each rank's phase seconds, steps and last update are exported "
        "(hwtop_job_rank_*{job_name,rank,Hostname}) for 'hwtop fleet --prometheus URL --job NAME'.")
    export.add_argument("--listen", type=listen_address, default=listen_address(DEFAULT_LISTEN),
                        metavar="HOST:PORT", help=f"address to bind (default {DEFAULT_LISTEN}; 0.0.0.0:PORT exposes "
                                                  "it to the network)")
    export.add_argument("--replay", metavar="FILE", help="serve a recording as it plays instead of this machine")
    export.add_argument("--hostname", metavar="NAME", default=None,
                        help="the Hostname label (default: $NODE_NAME if set, else this machine's name, as "
                             "dcgm-exporter does)")
    add_source_options(export, "seconds between samples (default 1)", sub=True)
    add_job_options(export, sub=True)
    export.add_argument("--job-name", metavar="NAME", default=None,
                        help="with --pid/--job: the job_name label of the job's rank series (default: the --job "
                             "pattern, else 'pid N'); give every node's exporter the same one")


def live_source(args: argparse.Namespace) -> Sampler | None:
    """This machine or a demo one (whose story may bring its own focused job), with the job of --pid/--job focused
    as the monitor focuses it (its ranks' stacks sampled, its ranks named after --hostname); None after one line on
    stderr (exit 2): no such process, no match, not permitted."""
    hostname = args.hostname or os.environ.get("NODE_NAME") or ""  # the name its ranks carry
    try:
        return open_sampler(source_config(args, host=hostname))
    except JobRefused as refused:
        from hwtop.model.safe_text import printable

        print(f"hwtop: error: {printable(str(refused))}", file=sys.stderr)
        return None


def recorded_source(args: argparse.Namespace) -> SnapshotSource:
    """A recording, played at --interval (a bad one exits 2 with its line)."""
    from hwtop.cli.replay import load_or_exit
    from hwtop.recording.replay import ReplaySource

    return ReplaySource(load_or_exit(args.replay), interval_s=args.interval)


def run(call: Invocation) -> int:
    from hwtop.exporter.server import make_exporter
    from hwtop.recording.store import hwtop_version
    from hwtop.session.session import Session

    args = call.args
    job_name = getattr(args, "job_name", None)
    watching = bool(getattr(args, "pid", None) or getattr(args, "job", None))
    if job_name is not None and not watching and args.demo is None:  # a demo story may bring its own job
        print("hwtop: error: --job-name names the job of --pid or --job: give one of them", file=sys.stderr)
        return 2
    source = recorded_source(args) if args.replay is not None else live_source(args)
    if source is None:
        return 2
    if watching:  # its ranks' series are labelled by --job-name, else the --job pattern, else 'pid N'
        job_name = job_name or (args.job if args.job and not args.job.isdigit() else None)
    session = Session(source, call.config.thresholds)
    host, port = args.listen
    try:
        server, stop, _latest = make_exporter(session.tick, host, port, args.interval, hwtop_version(),
                                              hostname=args.hostname or os.environ.get("NODE_NAME") or None,
                                              job_name=job_name)
    except OSError as error:
        session.close()
        print(f"hwtop: error: cannot listen on {host}:{port}: {error.strerror or error}", file=sys.stderr)
        return 2
    try:
        serve(server, host)
    finally:
        stop.set()
        server.server_close()
        session.close()
    return 0


def serve(server: MetricsServer, host: str) -> None:
    """Until ctrl-c, SIGTERM or SIGHUP (ending as ctrl-c does, connections closed, exit 0)."""
    previous = {sig: signal.getsignal(sig) for sig in (signal.SIGTERM, signal.SIGHUP)}
    for sig in previous:
        signal.signal(sig, lambda _signum, _frame: server.stop_soon())
    warning = exposure_warning(host, server.server_port)
    if warning:
        print(warning, file=sys.stderr, flush=True)
    shown = f"[{host}]" if ":" in host else host
    print(f"serving http://{shown}:{server.server_port}/metrics (ctrl-c stops)", file=sys.stderr, flush=True)
    try:
        server.serve_forever(poll_interval=0.5)
    except KeyboardInterrupt:
        pass
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
