"""Hysteresis, thresholds from a config file, a broken rule, and the engine's bounded memory."""

from __future__ import annotations

import pytest

from hwtop.advice.engine import MAX_SNAPSHOTS, AdviceEngine
from hwtop.advice.rules import RULE_IDS, RULES, Rule
from hwtop.advice.thresholds import TABLE, Thresholds
from hwtop.model.finding import Finding
from hwtop.model.workload import OomEvent
from hwtop.session.config import load
from tests.advice_timeline import Timeline, ids, rank, run, workload


def starved(t: Timeline, wait: float):
    return t.tick(workload=workload(rank(0, wait=wait)))


def test_appears_after_its_hold_and_clears_after_its_clear_time():
    t = Timeline()
    frames = [starved(t, 0.8) for _ in range(8)] + [starved(t, 0.05) for _ in range(16)]
    shown = ["gpu-starved" in ids(f) for f in run(frames)]
    # True from tick 0, hold 5 s: shown from tick 5. The wait drops at tick 8, but its 5 s mean stays above 30%
    # to tick 11 (two 80% ticks in six); false from tick 12, clear 10 s: gone at tick 21.
    assert shown == [False] * 5 + [True] * 16 + [False] * 3


def test_a_condition_that_flickers_never_shows():
    """True for 4 s, false for 1 s, again and again: a rule holding 5 s never shows it."""
    pattern = ([True] * 4 + [False]) * 6
    state = iter(pattern)

    def scripted(window, thresholds):
        if next(state):
            yield Finding("scripted", "warning", "t", ("e",), ("f",))

    engine = AdviceEngine(rules=(Rule("scripted", scripted, 5.0, 10.0, "a script"),))
    t = Timeline()
    assert not any(engine.update(t.tick()) for _ in pattern)


def test_since_is_when_the_condition_started():
    t = Timeline()
    frames = [starved(t, 0.8) for _ in range(7)]
    finding = run(frames)[-1][0]
    assert finding.since == frames[0].time


def test_findings_sorted_by_severity():
    t = Timeline()
    job = workload(rank(0, wait=0.8), oom=OomEvent(rank=0, batch_size=8, time=t.time + 1))
    found = run([t.tick(workload=job) for _ in range(7)])[-1]
    assert [f.severity for f in found] == ["critical", "warning"]


def test_time_going_backwards_resets():
    t = Timeline()
    engine = AdviceEngine()
    frames = [starved(t, 0.8) for _ in range(7)]
    run(frames, engine)
    assert engine.findings
    engine.update(frames[0])
    assert not engine.findings


@pytest.mark.slow  # over the fast suite's minute on two cores (--durations)
def test_the_window_is_bounded_and_thinned_at_fast_refresh():
    t = Timeline()
    engine = AdviceEngine()
    for _ in range(4000):  # 200 s at 0.05 s
        last = t.tick(seconds=0.05)
        engine.update(last)
    kept = engine._snapshots
    assert len(kept) <= MAX_SNAPSHOTS and kept[-1] is last
    assert 119.0 <= kept[-1].time - kept[0].time <= 120.0  # still the whole window
    gaps = [b.time - a.time for a, b in zip(kept, list(kept)[1:], strict=False)]
    assert min(gaps[:-1]) >= 0.5 - 1e-3  # float time steps


def test_a_broken_rule_is_named_and_the_others_still_run():
    def broken(window, thresholds):
        raise KeyError("boom")

    rules = (Rule("broken", broken, 0.0, 0.0, "nothing"),) + RULES
    engine = AdviceEngine(rules=rules)
    t = Timeline()
    job = workload(rank(0), oom=OomEvent(rank=0, batch_size=8, time=t.time + 1))
    assert "cuda-oom" in ids(engine.update(t.tick(workload=job)))
    assert engine.rule_errors == {"broken": "KeyError: 'boom'"}


def test_the_rules_keep_their_order_and_ids():
    """The order the pane's watching line, doctor and config errors show (each rule's `order`), one id each: the
    set itself is derived from the rules' code (tests/advice/test_registry.py), not mirrored here."""
    assert [rule.order for rule in RULES] == sorted(rule.order for rule in RULES)
    assert RULE_IDS[:3] == ("cuda-oom", "gpu-starved", "cpu-single-core") and len(set(RULE_IDS)) == len(RULE_IDS)
    assert RULE_IDS == tuple(rule.id for rule in RULES)


def test_every_threshold_says_where_it_comes_from():
    assert all(entry.why and entry.unit for entry in TABLE.values())


def test_config_file_overrides_a_threshold_and_a_hold(tmp_path):
    config = tmp_path / "config.toml"
    config.write_text("[advice.thresholds]\ndata_wait_fraction = 0.9\n\n[advice.hold_s]\ngpu-starved = 0\n")
    thresholds = load(str(config)).thresholds
    assert thresholds["data_wait_fraction"] == 0.9 and thresholds["gpu_waiting_util_percent"] == 50.0
    t = Timeline()
    assert "gpu-starved" not in ids(run([starved(t, 0.8)], AdviceEngine(thresholds))[-1])
    assert "gpu-starved" in ids(run([starved(t, 0.95)], AdviceEngine(thresholds))[-1])  # at once: hold 0


@pytest.mark.parametrize(("text", "message"), [
    ("[advice.thresholds]\nno_such_threshold = 1\n", "advice.thresholds.no_such_threshold: unknown advice threshold"),
    ("[advice.thresholds]\ndata_wait_fraction = 'high'\n", "data_wait_fraction = 'high': expected a fraction"),
    ("[advice\n", "config.toml"),
])
def test_a_broken_config_file_is_refused_with_its_name(tmp_path, text, message):
    config = tmp_path / "config.toml"
    config.write_text(text)
    with pytest.raises(ValueError, match=message):
        load(str(config))


def test_no_config_file_means_the_defaults(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    assert load(None).thresholds.values == Thresholds().values
