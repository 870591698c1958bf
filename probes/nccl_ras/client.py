"""One RAS query over the text protocol of src/ras/client_support.cc: `CLIENT PROTOCOL 2` (answered `SERVER
PROTOCOL n`), `TIMEOUT n` (`OK`), `SET FORMAT json` (`OK`; NCCL before 2.28.7 answers `ERROR: Unknown command`,
and the text format is asked for instead), then `STATUS`, whose answer ends when the server closes the
connection. Every step has a deadline and the answer a size cap; anything amiss is a RasError of one line."""

from __future__ import annotations

import ipaddress
import socket
import time
from dataclasses import dataclass

PROTOCOL = 2  # NCCL_RAS_CLIENT_PROTOCOL (src/ras/ras_internal.h)
DEFAULT_PORT = 28028  # NCCL_RAS_CLIENT_PORT
NCCL_TIMEOUT_S = 5  # TIMEOUT sent: NCCL's own default per leg (RAS_COLLECTIVE_LEG_TIMEOUT_SEC)
REPLY_CAP = 16 << 20  # a 4,096-rank JSON answer is a few MB (benchmarks/ras_scale.py)
LINE_CAP = 4096
ALLOWED = ("CLIENT PROTOCOL", "TIMEOUT", "SET FORMAT", "STATUS")  # every command hwtop may send


class RasError(Exception):
    """A query that failed: its message is the one line shown in the job's errors."""


@dataclass(frozen=True, slots=True)
class Address:
    host: str
    port: int

    def __str__(self) -> str:
        return f"[{self.host}]:{self.port}" if ":" in self.host else f"{self.host}:{self.port}"


def parse_address(text: str) -> Address:
    """`HOST:PORT` (NCCL_RAS_ADDR's form; `[v6]:PORT` too). A wildcard host means this host's loopback."""
    text = text.strip()
    if text.startswith("["):
        host, _, rest = text[1:].partition("]")
        port_text = rest[1:] if rest.startswith(":") else ""
    else:
        host, _, port_text = text.rpartition(":")
    if not host or not port_text.isdigit() or not 0 < int(port_text) < 65536:
        raise ValueError(f"not HOST:PORT: {text[:80]!r}")
    if host == "*" or _unspecified(host):  # NCCL listens on every interface: this host's loopback is one
        host = "localhost"
    return Address(host, int(port_text))


def _unspecified(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).is_unspecified
    except ValueError:
        return False


@dataclass(frozen=True, slots=True)
class RawReply:
    format: str  # json | text
    text: str
    server_protocol: int | None


class _Conn:
    def __init__(self, sock: socket.socket, deadline: float) -> None:
        self.sock, self.deadline, self.buffer = sock, deadline, b""

    def _left(self) -> float:
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise RasError("no complete answer before the deadline")
        return left

    def send(self, command: str) -> None:
        if not command.upper().startswith(ALLOWED):  # hwtop's manners: never VERBOSE STATUS, MONITOR, ...
            raise ValueError(f"not a command hwtop sends: {command}")
        self.sock.settimeout(self._left())
        self.sock.sendall(command.encode("ascii") + b"\n")

    def line(self) -> str:
        while b"\n" not in self.buffer:
            if len(self.buffer) > LINE_CAP:
                raise RasError("an answer line over 4 KiB: not a RAS server")
            self.sock.settimeout(self._left())
            chunk = self.sock.recv(LINE_CAP)
            if not chunk:
                raise RasError("the server closed the connection mid-answer")
            self.buffer += chunk
        line, _, self.buffer = self.buffer.partition(b"\n")
        return line.decode("utf-8", "replace").rstrip("\r")

    def rest(self, cap: int) -> bytes:
        parts, size = [self.buffer], len(self.buffer)
        self.buffer = b""
        while True:
            self.sock.settimeout(self._left())
            chunk = self.sock.recv(1 << 16)
            if not chunk:
                return b"".join(parts)
            size += len(chunk)
            if size > cap:
                raise RasError(f"answer over {cap >> 20} MiB: cut, not read")
            parts.append(chunk)


def query(address: Address, want_json: bool = True, deadline_s: float = 2.0 * NCCL_TIMEOUT_S + 2.0,
          cap: int = REPLY_CAP) -> RawReply:
    """Ask once for STATUS. `deadline_s` bounds the whole exchange (NCCL gathers data from every process for up
    to its TIMEOUT per leg, twice; ncclras waits as long)."""
    deadline = time.monotonic() + deadline_s
    try:
        sock = socket.create_connection((address.host, address.port), timeout=min(deadline_s, 3.0))
    except OSError as error:
        raise RasError(f"cannot connect to {address}: {error.strerror or error}") from None
    try:
        conn = _Conn(sock, deadline)
        conn.send(f"CLIENT PROTOCOL {PROTOCOL}")
        hello = conn.line()
        if not hello.upper().startswith("SERVER PROTOCOL "):
            raise RasError(f"not a RAS server: it answered {hello[:60]!r}")
        version = hello.split()[-1]
        server_protocol = int(version) if version.isdigit() else None
        conn.send(f"TIMEOUT {NCCL_TIMEOUT_S}")
        answer = conn.line()
        if answer.upper() != "OK":
            raise RasError(f"TIMEOUT refused: {answer[:60]!r}")
        form = "text"
        if want_json:
            conn.send("SET FORMAT json")
            answer = conn.line()
            if answer.upper() == "OK":
                form = "json"
            elif not answer.upper().startswith("ERROR"):
                raise RasError(f"SET FORMAT answered {answer[:60]!r}")
        conn.send("STATUS")
        body = conn.rest(cap)
    except TimeoutError:
        raise RasError("no complete answer before the deadline") from None
    except OSError as error:
        raise RasError(f"connection to {address} failed: {error.strerror or error}") from None
    finally:
        sock.close()
    return RawReply(form, body.decode("utf-8", "replace"), server_protocol)
