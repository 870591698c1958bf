"""One scrape of a real exporter that serves one Frame: started on a free loopback port, read once over HTTP as
Prometheus reads it, stopped."""

from __future__ import annotations

import threading
import urllib.request

from hwtop.exporter.server import make_exporter
from hwtop.model.frame import Frame


def scrape_once(frame: Frame, hostname: str | None = None) -> str:
    server, stop, _latest = make_exporter(lambda: frame, "127.0.0.1", 0, 3600.0, "test", hostname=hostname)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{server.server_port}/metrics", timeout=10) as response:
            return response.read().decode()
    finally:
        stop.set()
        server.shutdown()
        server.server_close()
