"""The exporter's hwtop_finding series follow the advice's grouping: one series per cause, the GPUs it covers
named in its scope label."""

from __future__ import annotations

import threading
import time
import urllib.request

from prometheus_client.parser import text_string_to_metric_families

from hwtop.exporter.server import make_exporter
from tests.advice_timeline import play_story


def test_fp32_on_eight_gpus_is_one_series_covering_gpu0_7() -> None:
    frame = play_story("amp", 30)[-1]
    server, stop, latest = make_exporter(lambda: frame, "127.0.0.1", 0, 3600.0, "test", hostname="dgx")
    threading.Thread(target=server.serve_forever, daemon=True).start()
    deadline = time.monotonic() + 10
    while latest.frame is None and time.monotonic() < deadline:  # its first tick, on the exporter's thread
        time.sleep(0.01)
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{server.server_port}/metrics", timeout=10) as response:
            text = response.read().decode()
    finally:
        stop.set()
        server.shutdown()
        server.server_close()
    (family,) = [f for f in text_string_to_metric_families(text) if f.name == "hwtop_finding"]
    amp = [s for s in family.samples if s.labels["rule"] == "amp-available"]
    assert [(s.labels["scope"], s.labels["severity"], s.value) for s in amp] == [("GPU0-7", "info", 1.0)]
