"""`hwtop report`: grade this box (or a demo profile) for PyTorch training; optional measurements and a memory
fit estimate for a given model."""

from __future__ import annotations

import argparse

from hwtop.cli.options import Invocation, add_source_options


def positive_number(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not value > 0 or value != value or value == float("inf"):
        raise argparse.ArgumentTypeError(f"must be a positive number, got {text!r}")
    return value


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {text!r}")
    return value


def add_options(report: argparse.ArgumentParser) -> None:
    report.description = (
        "This box's GPUs, CPU, memory and storage against the hardware guide's tiers and rules of thumb, each check "
        "with the measured value beside the guide's figure. Measurements run only when asked. JSON schema: "
        "docs/snapshot-schema.md (hwtop.report/1).")
    report.add_argument("--json", action="store_true", help="print the report as JSON")
    report.add_argument("--storage", metavar="PATH", help="measure sequential reads of the files under PATH "
                                                          "(page cache bypassed)")
    report.add_argument("--storage-bytes", type=positive_int, default=1 << 30, metavar="N",
                        help="read at most N bytes for --storage (default 1 GiB)")
    report.add_argument("--pcie", action="store_true", help="host↔device copy bandwidth per GPU (CUDA, needs torch)")
    report.add_argument("--compute", action="store_true", help="matmul throughput per GPU in fp32/TF32/fp16/bf16 "
                                                               "(on CPU, the CPU's; needs torch)")
    report.add_argument("--params", type=positive_number, metavar="N", help="parameters of the model, e.g. 1.2e8")
    report.add_argument("--optimizer", choices=["adam", "sgd"], default="adam", help="default adam")
    report.add_argument("--amp", action="store_true", help="mixed precision (fp16/bf16 with fp32 master weights)")
    report.add_argument("--batch", type=positive_int, metavar="B", help="per-GPU batch of --activation-gb")
    report.add_argument("--activation-gb", type=positive_number, metavar="X",
                        help="activation memory measured at --batch B (fp32), in GB")
    add_source_options(report, "unused by report", sub=True)


def run(call: Invocation) -> int:
    from hwtop.report.checks import checks, tier
    from hwtop.report.facts import gather
    from hwtop.report.render import as_json, text

    args, parser = call.args, call.parser
    given = [name for name, value in (("--amp", args.amp), ("--batch", args.batch),
                                      ("--activation-gb", args.activation_gb)) if value]
    if given and args.params is None:
        parser.error(f"{' and '.join(given)} need --params")
    if args.demo is not None and (args.storage or args.pcie or args.compute):
        parser.error("--storage, --pcie and --compute measure this machine: not with --demo")
    facts = gather(args.demo)
    storage = storage_error = bench = fit = None
    if args.storage:
        from hwtop.report.storage import measure

        try:
            storage = measure(args.storage, args.storage_bytes)
        except OSError as error:
            storage_error = f"cannot measure {args.storage}: {error.strerror or error}"
    if args.pcie or args.compute:
        from hwtop.report.measure import run_bench

        bench = run_bench(args.compute, args.pcie)
    if args.params is not None:
        from hwtop.report.fit import estimate

        memory = min((g.memory_bytes for g in facts.gpus if g.memory_bytes), default=None)
        fit = estimate(args.params, args.optimizer, args.amp, args.batch, args.activation_gb,
                       gpu_count=len(facts.gpus) or 1, gpu_memory_bytes=memory, ram_bytes=facts.ram_bytes)
    grade, results = tier(facts), checks(facts)
    if args.json:
        import json

        print(json.dumps(as_json(facts, grade, results, fit, storage, bench, storage_error), indent=2))
    else:
        print(text(facts, grade, results, fit, storage, bench, storage_error))
    return 0
