"""Addresses the user typed, checked before anything runs: an exporter (`host:9400`, `http://host:9400/metrics`),
a Prometheus server (`http://prom:9090`, with a path prefix if it sits behind a proxy) and a series selector
(`{job="train"}`). A bad one is a ValueError with a one-line reason (the CLI exits 2 with it); the same exporter
given twice is merged, with a warning naming both spellings."""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import urlsplit, urlunsplit

DEFAULT_PORTS = {"http": 80, "https": 443}
_NAME = r"[A-Za-z_][A-Za-z0-9_]*"
_VALUE = r'"(?:[^"\\]|\\.)*"'
_MATCHER = rf"\s*{_NAME}\s*(?:=~|!~|!=|=)\s*{_VALUE}\s*"
_SELECTOR = re.compile(rf"\{{(?:{_MATCHER}(?:,{_MATCHER})*,?)?\s*\}}")


def _check(text: str, what: str) -> tuple[str, str, int, str, str]:
    """(scheme, host, port, path, query) of an http(s) address, or ValueError."""
    url = text.strip()
    if not url:
        raise ValueError(f"empty {what} address")
    if "://" not in url:
        url = f"http://{url}"
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as error:  # "Port out of range 0-65535", "Port could not be cast to integer value as 'x'"
        raise ValueError(f"not a valid {what} address {text!r}: {error}") from None
    if parts.scheme not in DEFAULT_PORTS:
        raise ValueError(f"not a valid {what} address {text!r}: only http:// and https:// are read")
    if not parts.hostname:
        raise ValueError(f"not a valid {what} address {text!r}: no host")
    if port == 0:
        raise ValueError(f"not a valid {what} address {text!r}: port must be 1-65535")
    if parts.username or parts.password:
        raise ValueError(f"not a valid {what} address {text!r}: credentials in the URL are not supported")
    if any(c.isspace() or ord(c) < 0x20 for c in url):
        raise ValueError(f"not a valid {what} address {text!r}: it contains spaces or control characters")
    return parts.scheme, parts.hostname.lower(), port or DEFAULT_PORTS[parts.scheme], parts.path, parts.query


def _netloc(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def exporter_url(text: str) -> str:
    """host:9400 → http://host:9400/metrics; one spelling per exporter (scheme and host lower-cased, the
    default port written out, /metrics when no path is given), so duplicates compare equal."""
    scheme, host, port, path, query = _check(text, "exporter")
    path = path if path not in ("", "/") else "/metrics"
    return urlunsplit((scheme, _netloc(host, port), path, query, ""))


def prometheus_url(text: str) -> str:
    """http://prom:9090 or http://proxy/prometheus: the base the /api/v1/... paths go under."""
    scheme, host, port, path, query = _check(text, "Prometheus")
    if query:
        raise ValueError(f"not a valid Prometheus address {text!r}: give the server's base URL, without a query")
    if path.rstrip("/").endswith("/api/v1"):
        path = path.rstrip("/")[: -len("/api/v1")]
    return urlunsplit((scheme, _netloc(host, port), path.rstrip("/"), "", ""))


def selector_matchers(text: str) -> str:
    """`{job="train", env=~"prod.*"}` → `job="train", env=~"prod.*"`, to put inside each query's braces."""
    if not _SELECTOR.fullmatch(text.strip()):
        raise ValueError(f"not a series selector {text!r}: expected label matchers such as '{{job=\"train\"}}'")
    return text.strip()[1:-1].strip().rstrip(",").strip()


@dataclass(frozen=True, slots=True)
class Targets:
    urls: tuple[str, ...]
    warnings: tuple[str, ...]


def merge(texts: list[str]) -> Targets:
    """Checks and normalises every exporter address; the second spelling of one exporter is dropped with a
    warning. Raises ValueError on the first bad address."""
    seen: dict[str, str] = {}
    warnings: list[str] = []
    for text in texts:
        url = exporter_url(text)
        if url in seen:
            first = seen[url]
            same = f"{text!r} is listed twice" if first == text else f"{text!r} and {first!r} are the same exporter"
            warnings.append(f"{same} ({url}): shown once")
        else:
            seen[url] = text
    return Targets(tuple(seen), tuple(warnings))
