"""The config file: a typed schema (session.schema over session.config_file's dataclasses) refuses a wrong type, a value
out of range, an unknown key, threshold or rule with one line naming the key and what it allows (exit 2); a file
someone else owns or could write, a FIFO, a directory, a huge or non-UTF-8 file is refused like ssh refuses one."""

from __future__ import annotations

import math
import os
import stat
from pathlib import Path
from typing import get_args

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hwtop.advice.rules import RULE_IDS, THRESHOLDS
from hwtop.cli.main import main
from hwtop.session.config import THEMES, ConfigError, load
from hwtop.session.config_file import PANELS, ConfigFile, Theme
from hwtop.session.schema import parse


def config_file(tmp_path: Path, text: str, mode: int = 0o600) -> Path:
    path = tmp_path / "config.toml"
    path.write_text(text)
    path.chmod(mode)
    return path


def exit_line(capsys, path: Path) -> str:
    """Runs hwtop with this config; the one stderr line it exits 2 with."""
    with pytest.raises(SystemExit) as exited:
        main(["--config", str(path), "topo", "--demo", "dgx-a100"])
    assert exited.value.code == 2
    out, err = capsys.readouterr()
    assert out == "" and err.endswith("\n") and err.count("\n") == 1, err
    return err.rstrip("\n")


def test_advice_5_exits_2_with_one_line(tmp_path, capsys):
    path = config_file(tmp_path, "advice = 5\n")
    assert exit_line(capsys, path) == f"hwtop: error: {path}: advice = 5: expected a table with keys thresholds, hold_s"


@pytest.mark.parametrize(("text", "message"), [
    ("[ui]\ninterval = -1\n", "ui.interval = -1: expected a number of seconds more than 0 and at most 3600"),
    ("[ui]\ninterval = 3601\n", "ui.interval = 3601: expected a number of seconds more than 0 and at most 3600"),
    ("[ui]\ninterval = true\n", "ui.interval = true: expected a number of seconds more than 0 and at most 3600"),
    ("[ui]\ninterval = nan\n", "ui.interval = nan: expected a number of seconds more than 0 and at most 3600"),
    ("[ui]\ninterval = \"1\"\n", "ui.interval = '1': expected a number of seconds more than 0 and at most 3600"),
    ("[ui]\ntheme = 3\n", "ui.theme = 3: expected one of dark, light, mono"),
    ("[ui]\nhide = \"disks\"\n", "ui.hide = 'disks': expected a list of any of: cpu, memory, disks, gpu, network, "
                                 "advice, processes"),
    ("ui = 1\n", "ui = 1: expected a table with keys interval, theme, hide"),
    ("[advice]\nthresholds = [1]\n", "advice.thresholds = [1]: expected a table of advice threshold names"),
    ("[advice]\nwindow = 3\n", "advice.window: unknown key; known: thresholds, hold_s"),
    ("[advice.thresholds]\ngpu_memory_full_percent = 101\n",
     "advice.thresholds.gpu_memory_full_percent = 101: expected a percentage from 0 to 100"),
    ("[advice.thresholds]\ncore_idle_percent = -5\n",
     "advice.thresholds.core_idle_percent = -5: expected a percentage from 0 to 100"),
    ("[advice.thresholds]\ndata_wait_fraction = 1.5\n",
     "advice.thresholds.data_wait_fraction = 1.5: expected a fraction from 0 to 1"),
    ("[advice.thresholds]\nfragmentation_ratio = 0.5\n",
     "advice.thresholds.fragmentation_ratio = 0.5: expected a ratio of 1 or more"),
    ("[advice.thresholds]\nhdd_bytes_per_s = -1\n",
     "advice.thresholds.hdd_bytes_per_s = -1: expected a number of bytes per second of 0 or more"),
    ("[advice.thresholds]\nscale_drops = inf\n", "advice.thresholds.scale_drops = inf: expected a number of drops of "
                                                 "0 or more"),
    ("[advice.hold_s]\ngpu-starved = -1\n", "advice.hold_s.gpu-starved = -1: expected a number of seconds from 0 "
                                            "to 3600"),
    ("[advice.hold_s]\ngpu-starved = \"soon\"\n", "advice.hold_s.gpu-starved = 'soon': expected a number of "
                                                  "seconds from 0 to 3600"),
])
def test_a_wrong_type_or_range_names_the_key_and_what_it_allows(tmp_path, capsys, text, message):
    path = config_file(tmp_path, text)
    assert exit_line(capsys, path) == f"hwtop: error: {path}: {message}"


def test_unknown_rules_and_thresholds_are_named_with_the_known_ones(tmp_path, capsys):
    line = exit_line(capsys, config_file(tmp_path, "[advice.hold_s]\ngpu-starving = 3\n"))
    assert line.endswith(f"advice.hold_s.gpu-starving: unknown rule; known: {', '.join(RULE_IDS)}")
    line = exit_line(capsys, config_file(tmp_path, "[advice.thresholds]\ndata_wait = 0.5\n"))
    assert line.endswith(f"advice.thresholds.data_wait: unknown advice threshold; known: {', '.join(THRESHOLDS)}")


def test_control_characters_in_a_config_never_reach_the_terminal(tmp_path, capsys):
    path = config_file(tmp_path, '[ui]\ntheme = "\\u001b]0;pwn\\u0007"\n"\\u001b[2J" = 1\n')
    line = exit_line(capsys, path)
    assert "\x1b" not in line and line.endswith("ui.theme = '\\x1b]0;pwn\\x07': expected one of dark, light, mono")
    path = config_file(tmp_path, '[ui]\n"\\u001b[2J\\u009b" = 1\n')
    assert exit_line(capsys, path).endswith("ui.␛[2J�: unknown key; known: interval, theme, hide")


def test_a_whole_config_is_read_into_its_types(tmp_path):
    path = config_file(tmp_path, '[ui]\ninterval = 2\ntheme = "mono"\nhide = ["disks", "gpu"]\n'
                                 "[advice.thresholds]\ngpu_memory_full_percent = 90\nfragmentation_ratio = 2\n"
                                 "[advice.hold_s]\ngpu-starved = 0\n", mode=0o644)
    config = load(str(path))
    assert (config.interval, config.theme, config.hide, config.path) == (2.0, "mono", ("disks", "gpu"), str(path))
    assert isinstance(config.interval, float)
    assert config.thresholds["gpu_memory_full_percent"] == 90.0 and config.thresholds["fragmentation_ratio"] == 2.0
    assert config.thresholds.hold_s == {"gpu-starved": 0.0}


def test_the_schema_and_the_names_the_app_uses_agree():
    assert set(THEMES) == set(get_args(Theme))
    assert PANELS == ("cpu", "memory", "disks", "gpu", "network", "advice", "processes")


# ----- whose file it is -----

def test_a_config_owned_by_another_user_is_refused(tmp_path, capsys, monkeypatch):
    path = config_file(tmp_path, "[ui]\ninterval = 2\n")
    if os.geteuid() == 0:
        os.chown(path, 65534, 65534)  # nobody's
        expected = "owned by nobody, not by root"
    else:
        me = os.geteuid()
        monkeypatch.setattr(os, "geteuid", lambda: me + 1)  # hwtop runs as someone else: the file is not theirs
        expected = f"owned by {Path(path).owner()}, not by "
    assert expected in exit_line(capsys, path)
    assert "refusing config file" in exit_line(capsys, path)


@pytest.mark.parametrize(("mode", "who"), [(0o620, "group"), (0o602, "others"), (0o666, "group and others")])
def test_a_config_others_can_write_is_refused(tmp_path, capsys, mode, who):
    path = config_file(tmp_path, "[ui]\ninterval = 2\n", mode=mode)
    assert exit_line(capsys, path) == f"hwtop: error: refusing config file {path}: writable by {who} (chmod go-w " \
                                      "to use it)"


def test_the_default_config_is_refused_the_same_way(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    (tmp_path / "hwtop").mkdir()
    path = tmp_path / "hwtop" / "config.toml"
    path.write_text("[ui]\ninterval = 2\n")
    path.chmod(0o664)
    with pytest.raises(SystemExit) as exited:
        main(["topo", "--demo", "dgx-a100"])
    assert exited.value.code == 2 and "writable by group" in capsys.readouterr().err
    path.chmod(0o644)
    assert load(None).interval == 2.0


def test_a_symlinked_config_is_judged_by_the_file_it_names(tmp_path, capsys):
    """A config linked from a dotfiles checkout is read; the file read is the one checked."""
    target = tmp_path / "dotfiles.toml"
    target.write_text("[ui]\ninterval = 3\n")
    target.chmod(0o644)
    link = tmp_path / "config.toml"
    link.symlink_to(target)
    assert load(str(link)).interval == 3.0
    target.chmod(0o666)
    assert "writable by group and others" in exit_line(capsys, link)


def test_not_a_file_not_text_or_too_big_is_refused(tmp_path, capsys):
    fifo = tmp_path / "fifo.toml"
    os.mkfifo(fifo, 0o600)
    assert exit_line(capsys, fifo).endswith(f"refusing config file {fifo}: not a regular file")  # and no hang
    assert exit_line(capsys, tmp_path).endswith(f"refusing config file {tmp_path}: not a regular file")
    binary = tmp_path / "binary.toml"
    binary.write_bytes(b"[ui]\ntheme = \"\xff\"\n")
    binary.chmod(0o600)
    assert exit_line(capsys, binary) == f"hwtop: error: {binary}: not UTF-8 text (byte 14)"
    huge = config_file(tmp_path, "# " + "x" * (1 << 20) + "\n")
    assert exit_line(capsys, huge).endswith("larger than 1 MiB")
    assert exit_line(capsys, tmp_path / "missing.toml") == f"hwtop: error: config file not found: " \
                                                            f"{tmp_path / 'missing.toml'}"
    assert stat.S_ISFIFO(fifo.stat().st_mode)


# ----- any document at all -----

toml_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=8)
keys = st.sampled_from(["ui", "advice", "interval", "theme", "hide", "thresholds", "hold_s", "gpu-starved",
                        "data_wait_fraction", "x"])
documents = st.recursive(toml_values, lambda inner: st.dictionaries(keys, inner, max_size=4), max_leaves=12)


@settings(max_examples=60, deadline=None)
@given(st.dictionaries(keys, documents, max_size=4))
@pytest.mark.slow  # over the fast suite's minute on two cores (--durations)
def test_any_document_is_read_or_refused_in_one_line(document):
    try:
        config = parse(ConfigFile, document)
    except ConfigError as error:
        message = str(error)
        assert message and "\n" not in message and "\x1b" not in message
        return
    ui = config.ui
    assert ui.interval is None or (isinstance(ui.interval, float) and 0 < ui.interval <= 3600)
    assert ui.theme in (None, *THEMES) and set(ui.hide) <= set(PANELS)
    for name, value in config.advice.thresholds.items():
        assert name in THRESHOLDS and math.isfinite(value)
    assert set(config.advice.hold_s) <= set(RULE_IDS)
