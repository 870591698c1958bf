"""`hwtop fleet`: one row per host, worst first, read from hwtop or dcgm exporters, or from a Prometheus server
that scrapes them; with --job, every rank of one job across its hosts."""

from __future__ import annotations

import argparse
import sys

from hwtop.cli.options import Invocation, add_source_options, interval_seconds


def add_options(fleet: argparse.ArgumentParser) -> None:
    fleet.description = (
        "Read the exporters at URL... (host:port or http://host:port/metrics; hwtop export or NVIDIA's "
        "dcgm-exporter), or a Prometheus server (--prometheus) that scrapes them (dcgm-exporter and node-exporter "
        "series work too), every --interval; one row per host, worst first; enter opens its GPUs. A host that does "
        "not answer within --timeout is shown as such and retried.")
    fleet.add_argument("urls", nargs="*", metavar="URL")
    fleet.add_argument("--file", metavar="FILE", help="more URLs, one per line (# comments)")
    fleet.add_argument("--prometheus", metavar="URL", help="read the fleet from this Prometheus server's HTTP API")
    fleet.add_argument("--selector", metavar="{LABEL=\"VALUE\",...}", default="",
                       help="with --prometheus: only series matching these label matchers, e.g. '{job=\"train\"}'")
    fleet.add_argument("--timeout", type=interval_seconds, default=3.0, metavar="SECONDS",
                       help="deadline of each request (default 3)")
    fleet.add_argument("--job", metavar="NAME", default=None,
                       help="with --prometheus: every rank of this job (the job_name of its hosts' 'hwtop export "
                            "--job'), worst first, the straggler or the hang named with its host's top finding")
    fleet.add_argument("--rank-window", type=interval_seconds, default=60.0, metavar="SECONDS",
                       help="with --job: the span the ranks' shares are taken over (default 60)")
    fleet.add_argument("--alerts", action="store_true",
                       help="with --prometheus: open on its alerts, firing first (the default when one fires); with "
                            "--json, print them instead of the hosts: 0 read, 1 Prometheus did not give them")
    fleet.add_argument("--json", action="store_true",
                       help="read one round, print the hosts (and the --job view; through Prometheus without "
                            "--job, its jobs) as JSON and exit: 0 read, 1 Prometheus or every exporter did not "
                            "answer")
    add_source_options(fleet, "seconds between rounds (default 1)", sub=True, refused=True)


def run(call: Invocation) -> int:
    from hwtop.fleet.sources import DirectSource, FleetSource, PrometheusSource
    from hwtop.fleet.targets import merge, prometheus_url, selector_matchers

    args, parser = call.args, call.parser
    targets = list(args.urls)
    if args.file:
        try:
            with open(args.file, encoding="utf-8") as handle:
                targets += [line.split("#")[0].strip() for line in handle if line.split("#")[0].strip()]
        except (OSError, UnicodeDecodeError) as error:
            parser.error(f"cannot read {args.file}: {getattr(error, 'strerror', None) or error}")
    interval = max(args.interval, 1.0)
    source: FleetSource
    try:
        if args.prometheus is not None:
            if targets:
                parser.error("give exporter URLs or --prometheus, not both")
            source = PrometheusSource(prometheus_url(args.prometheus), selector_matchers(args.selector or "{}"),
                                      interval=interval, timeout=args.timeout, job=args.job,
                                      job_window_s=args.rank_window, thresholds=call.config.thresholds)
        else:
            if args.selector:
                parser.error("--selector needs --prometheus URL")
            if args.job is not None:
                parser.error("--job reads the job's ranks through Prometheus: it needs --prometheus URL")
            if args.alerts:
                parser.error("--alerts reads Prometheus's alerts: it needs --prometheus URL")
            if not targets:
                parser.error("fleet needs at least one exporter URL (or --file, or --prometheus URL)")
            merged = merge(targets)
            for warning in merged.warnings:
                print(f"hwtop: warning: {warning}", file=sys.stderr)
            source = DirectSource(list(merged.urls), interval=interval, timeout=args.timeout,
                                  warnings=list(merged.warnings))
    except ValueError as error:
        parser.error(str(error))
    if args.json:
        from hwtop.cli.fleet_json import fleet_json

        try:
            return fleet_json(source, args.timeout, args.alerts)
        finally:
            source.close()
    from hwtop.tui.fleet_app import FleetApp

    try:
        FleetApp(source, alerts=args.alerts).run()
    except KeyboardInterrupt:
        pass
    finally:
        source.close()
    return 0
