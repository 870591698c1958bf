"""deploy/ held to what it claims, with the tools this machine has: every alert of hwtop-alerts.yml has a severity,
a summary, a command that opens it, and a test that fires it and one that must not fire (promtool runs them: .ci/run
and the slow test below); the DaemonSet reads the host's pids, network and GPUs through NVIDIA's runtime without
taking a GPU; its PodMonitor finds it; the systemd unit passes systemd-analyze; every hwtop command line in the
manifests, the unit and deploy/README.md is one hwtop's own parser takes; the README's PrometheusRule one-liner
wraps exactly the rules."""

from __future__ import annotations

import configparser
import re
import shlex
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
import yaml

from hwtop.cli.main import build_parser

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
RULES = yaml.safe_load((DEPLOY / "hwtop-alerts.yml").read_text())
RULE_TESTS = yaml.safe_load((DEPLOY / "hwtop-alerts.test.yml").read_text())
SEVERITIES = {"critical", "warning", "info"}


def alerts() -> list[dict]:
    return [rule for group in RULES["groups"] for rule in group["rules"] if "alert" in rule]


def parses(argv: list[str]) -> None:
    """hwtop's own parser takes this command line (a wrong option exits 2, failing the test), each option spelt
    whole (argparse would take an abbreviation)."""
    assert argv[0] == "hwtop", argv
    parser = build_parser(argv[1:])
    parser.parse_args(argv[1:])
    commands = next(a for a in parser._actions if a.dest == "command").choices  # type: ignore[union-attr]
    sub = commands[argv[1]] if len(argv) > 1 and argv[1] in commands else parser  # type: ignore[index]
    spelt = {option for action in [*parser._actions, *sub._actions] for option in action.option_strings}
    assert {word.split("=")[0] for word in argv if word.startswith("--")} <= spelt, argv


def test_every_alert_says_its_severity_and_how_to_open_it():
    names = [rule["alert"] for rule in alerts()]
    assert len(names) == len(set(names)) == 14
    for rule in alerts():
        severity = rule["labels"]["severity"]
        assert severity in SEVERITIES or set(re.findall(r"\b(critical|warning|info)\b", severity)) <= SEVERITIES \
            and "{{" in severity, rule["alert"]
        notes = rule["annotations"]
        assert notes["summary"] and notes["description"], rule["alert"]
        assert {"hwtop_fleet", "hwtop_on_host"} & set(notes), rule["alert"]
        for command in (notes.get("hwtop_fleet", ""), notes.get("hwtop_on_host", "")):
            assert not command or command.lstrip("{ ").startswith(("hwtop", "if", "with")), command


def test_every_alert_has_a_test_that_fires_it_and_one_that_must_not():
    fired, quiet = set(), set()
    for case in RULE_TESTS["tests"]:
        for check in case["alert_rule_test"]:
            (fired if check.get("exp_alerts") else quiet).add(check["alertname"])
    names = {rule["alert"] for rule in alerts()}
    assert (names - fired, names - quiet) == (set(), set())


def test_the_daemonset_reads_the_host_and_takes_no_gpu():
    manifests = list(yaml.safe_load_all((DEPLOY / "kubernetes" / "hwtop-exporter.yaml").read_text()))
    (daemonset,) = [m for m in manifests if m["kind"] == "DaemonSet"]
    pod = daemonset["spec"]["template"]["spec"]
    assert (pod["hostPID"], pod["hostNetwork"], pod["runtimeClassName"]) == (True, True, "nvidia")
    (container,) = pod["containers"]
    env = {e["name"]: e.get("value") or e["valueFrom"]["fieldRef"]["fieldPath"] for e in container["env"]}
    assert env == {"NODE_NAME": "spec.nodeName", "NODE_IP": "status.hostIP", "NVIDIA_VISIBLE_DEVICES": "all",
                   "NVIDIA_DRIVER_CAPABILITIES": "utility"}
    assert "nvidia.com/gpu" not in str(container["resources"])
    assert container["securityContext"]["capabilities"] == {"drop": ["ALL"], "add": ["SYS_PTRACE", "DAC_READ_SEARCH"]}
    argv = ["hwtop", *(a.replace("$(NODE_IP)", "10.0.0.7") for a in container["args"])]
    parses(argv)
    assert argv[argv.index("--listen") + 1] == f"10.0.0.7:{container['ports'][0]['containerPort']}"
    assert daemonset["spec"]["selector"]["matchLabels"].items() <= pod_labels(daemonset).items()
    monitor = yaml.safe_load((DEPLOY / "kubernetes" / "podmonitor.yaml").read_text())
    assert monitor["spec"]["selector"]["matchLabels"].items() <= pod_labels(daemonset).items()
    (endpoint,) = monitor["spec"]["podMetricsEndpoints"]
    assert endpoint["port"] == container["ports"][0]["name"] and endpoint["honorLabels"] is True
    job = next(r["replacement"] for r in endpoint["relabelings"] if r["targetLabel"] == "job")
    down = next(r for r in alerts() if r["alert"] == "HwtopExporterDown")
    assert re.fullmatch(re.search(r'job=~"([^"]+)"', down["expr"]).group(1), job)  # type: ignore[union-attr]


def pod_labels(daemonset: dict) -> dict:
    return daemonset["spec"]["template"]["metadata"]["labels"]


def test_the_image_installs_hwtop_with_py_spy_and_runs_the_exporter():
    text = (DEPLOY / "kubernetes" / "Containerfile").read_text()
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    assert "py-spy" in " ".join(extras[re.search(r'"/src\[(\w+)\]"', text).group(1)])  # type: ignore[union-attr]
    entry = yaml.safe_load(re.search(r"^ENTRYPOINT (.+)$", text, re.MULTILINE).group(1))  # type: ignore[union-attr]
    command = yaml.safe_load(re.search(r"^CMD (.+)$", text, re.MULTILINE).group(1))  # type: ignore[union-attr]
    parses([*entry, *command])


def unit() -> configparser.ConfigParser:
    parser = configparser.ConfigParser(strict=False, interpolation=None)
    parser.optionxform = str  # type: ignore[assignment,method-assign]
    parser.read_string((DEPLOY / "slurm" / "hwtop-export.service").read_text())
    return parser


def test_the_node_service_runs_the_exporter_on_127_0_0_1_until_told():
    service = unit()["Service"]
    default = dict(item.split("=", 1) for item in [service["Environment"]])
    argv = shlex.split(service["ExecStart"].replace("${HWTOP_LISTEN}", default["HWTOP_LISTEN"]))
    assert argv[0] == "/usr/local/bin/hwtop" and default["HWTOP_LISTEN"] == "127.0.0.1:9400"
    parses(["hwtop", *argv[1:]])


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="systemd-analyze is not installed")
def test_systemd_analyze_verifies_the_unit(tmp_path: Path):
    """Its ExecStart pointed at this checkout's hwtop (verify wants the binary there), nothing else changed."""
    hwtop = shutil.which("hwtop") or str(Path(sys.executable).with_name("hwtop"))
    text = (DEPLOY / "slurm" / "hwtop-export.service").read_text().replace("/usr/local/bin/hwtop", hwtop)
    copy = tmp_path / "hwtop-export.service"
    copy.write_text(text)
    done = subprocess.run(["systemd-analyze", "verify", str(copy)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and hwtop and not done.stderr.strip(), done.stderr


def readme_commands() -> list[str]:
    """The hwtop command lines of deploy/README.md's indented blocks (an `srun ... hwtop ...` from hwtop on)."""
    text = (DEPLOY / "README.md").read_text()
    found = []
    for line in re.findall(r"^    (.+)$", text, re.MULTILINE):
        at = line.find("hwtop ")
        if at >= 0 and not line.startswith(("promtool", "docker", "kubectl", "python3", "install", "echo")):
            found.append(line[at:].split(" &")[0].split("  #")[0])
    return found


def test_every_hwtop_command_of_the_readme_is_one_hwtop_takes():
    commands = readme_commands()
    assert len(commands) >= 3, commands
    for line in commands:
        line = line.replace("$SLURM_JOB_ID", "4242").replace('"$SLURM_JOB_NAME"', "bert")
        line = line.replace('"$(hostname):9401"', "node7:9401").replace("<the box's address>", "10.0.0.7")
        parses(shlex.split(line))


@pytest.mark.slow
def test_the_readme_s_prometheusrule_one_liner_wraps_exactly_the_rules():
    line = next(line for line in (DEPLOY / "README.md").read_text().splitlines()
                if line.startswith("    python3 -c") and "PrometheusRule" in line)
    argv = shlex.split(line.split(" | ")[0])
    done = subprocess.run([sys.executable, *argv[1:]], capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    wrapped = yaml.safe_load(done.stdout)
    assert (wrapped["apiVersion"], wrapped["kind"]) == ("monitoring.coreos.com/v1", "PrometheusRule")
    assert wrapped["spec"] == RULES


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("promtool") is None, reason="promtool (Debian's prometheus package) is missing")
def test_promtool_checks_and_tests_the_rules():
    for argv in (["check", "rules", "deploy/hwtop-alerts.yml"], ["test", "rules", "deploy/hwtop-alerts.test.yml"],
                 ["check", "config", "deploy/prometheus.yml"]):
        done = subprocess.run(["promtool", *argv], capture_output=True, text=True, timeout=120, cwd=ROOT)
        assert done.returncode == 0 and "SUCCESS" in done.stdout + done.stderr, done.stdout + done.stderr


def test_the_xid_alert_calls_a_program_s_xid_a_warning_as_hwtop_s_own_rule_does():
    from hwtop.advice.rules.health import XID_MEANING

    rule = next(r for r in alerts() if r["alert"] == "GpuXidError")
    warned = {int(float(code)) for code in re.findall(r"eq \$value ([\d.]+)", rule["labels"]["severity"])}
    assert warned == {xid for xid, (_, hardware) in XID_MEANING.items() if not hardware}


def test_every_path_the_deploy_files_name_exists():
    """A manifest's comment that sends the reader to a file that is not there is a dead end."""
    for path in DEPLOY.rglob("*"):
        if path.is_file() and path.suffix in (".yaml", ".yml", ".md", ".service", "") :
            for named in re.findall(r"deploy/[\w./-]+\.(?:ya?ml|md|json|service)\b", path.read_text()):
                assert (ROOT / named).exists(), f"{path.relative_to(ROOT)} names {named}"


def test_the_image_listens_on_loopback_unless_told():
    text = (DEPLOY / "kubernetes" / "Containerfile").read_text()
    command = yaml.safe_load(re.search(r"^CMD (.+)$", text, re.MULTILINE).group(1))  # type: ignore[union-attr]
    assert command[command.index("--listen") + 1].startswith("127.0.0.1:")
