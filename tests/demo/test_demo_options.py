"""`--demo PROFILE --scenario NAME` on the command line, and what a demo refuses."""

from __future__ import annotations

import pytest

from hwtop.cli.machine import check_demo, make_sampler
from hwtop.cli.main import build_parser
from hwtop.demo.host import SimulatedHost
from hwtop.demo.job import DemoJob


def checked(*argv: str) -> str | None:
    parser = build_parser()
    args, _ = parser.parse_known_args(list(argv))
    check_demo(parser, args)
    return args.demo


def test_scenario_folds_into_the_demo_spec() -> None:
    assert checked("--demo", "dgx-a100", "--scenario", "starved", "snapshot", "--json") == "dgx-a100:starved"
    assert checked("--demo", "dgx-a100:oom", "snapshot", "--json") == "dgx-a100:oom"
    assert checked("--demo", "dgx-a100:r470", "snapshot", "--json") == "dgx-a100:r470"


@pytest.mark.parametrize("argv, message", [
    (("--scenario", "starved", "snapshot", "--json"), "--scenario needs --demo"),
    (("--demo", "dgx-a100", "--scenario", "bogus", "snapshot", "--json"), "unknown demo scenario 'bogus'"),
    (("--demo", "dgx-a100", "--scenario", "shared", "snapshot", "--json"),
     "unknown demo scenario 'shared' ('shared' is a driver variant: --demo PROFILE:shared)"),
    (("--demo", "dgx-a100:r470", "--scenario", "oom", "snapshot", "--json"), "driver variant"),
    (("--demo", "dgx-a100", "--pid", "1", "snapshot", "--json"), "--pid watch this machine"),
    (("--demo", "dgx-a100", "--workload", "balanced"), "--workload watch this machine"),
])
def test_a_bad_demo_line_is_one_error(argv: tuple[str, ...], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        checked(*argv)
    assert exit_info.value.code == 2
    assert message in capsys.readouterr().err


def test_the_demo_sampler_reads_a_simulated_host_even_without_gpus() -> None:
    sampler = make_sampler("gtx1660s:starved", no_gpu=True)
    try:
        assert isinstance(sampler.host, SimulatedHost) and sampler.host.story.name == "starved"
        assert isinstance(sampler.workload, DemoJob) and sampler.gpu is None and sampler.simulated
        snapshot = sampler.sample()
        assert snapshot.host is not None and snapshot.host.hostname == "desktop-1660s"
        assert snapshot.cpu is not None and snapshot.cpu.logical_cores == 12
    finally:
        sampler.close()
