"""The exporter's hwtop_finding series follow the advice's grouping: one series per cause, the GPUs it covers
named in its scope label."""

from __future__ import annotations

import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.advice_timeline import play_story
from tests.exporter.scrape import scrape_once


@pytest.mark.slow  # over the fast suite's minute on two cores (--durations)
def test_fp32_on_eight_gpus_is_one_series_covering_gpu0_7() -> None:
    frame = play_story("amp", 30)[-1]
    text = scrape_once(frame, hostname="dgx")
    (family,) = [f for f in text_string_to_metric_families(text) if f.name == "hwtop_finding"]
    amp = [s for s in family.samples if s.labels["rule"] == "amp-available"]
    assert [(s.labels["scope"], s.labels["severity"], s.value) for s in amp] == [("GPU0-7", "info", 1.0)]
