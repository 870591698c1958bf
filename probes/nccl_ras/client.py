"""One RAS query over the text protocol of src/ras/client_support.cc, with the manners of NCCL's own client
(src/ras/client.cc, `ncclras`): `CLIENT PROTOCOL 2` answered `SERVER PROTOCOL n` within a 1 s deadline, or the
connection is dropped and made again (every local rank listens on the port with SO_REUSEPORT, and the kernel may
hand the connection to a rank that is stopped: ncclras retries the same way); `SET FORMAT json` (`OK`; before
2.28.7 `ERROR: Unknown command`, and the text format is asked for instead), then `STATUS`, whose answer ends when
the server closes the connection. No `TIMEOUT`: the server's default per gathering leg is already 5 s times the
job's NCCL_RAS_TIMEOUT_FACTOR (ras_internal.h RAS_COLLECTIVE_LEG_TIMEOUT), and sending one would override the
job's factor; hwtop's own deadline follows the same factor (a leg and the extra timeout, both scaled). Every step
has a deadline and the answer a size cap sized by the job (ranks x communicators); anything amiss is a RasError of
one line."""

from __future__ import annotations

import functools
import ipaddress
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import ParamSpec, TypeVar

PROTOCOL = 2  # NCCL_RAS_CLIENT_PROTOCOL (src/ras/ras_internal.h)
DEFAULT_PORT = 28028  # NCCL_RAS_CLIENT_PORT
LEG_S = 5  # RAS_COLLECTIVE_LEG_TIMEOUT_SEC = RAS_COLLECTIVE_EXTRA_TIMEOUT_SEC, each times the timeout factor
SEND_S = 2.0  # hwtop's margin for the answer to arrive once gathered
HANDSHAKE_S = 1.0  # client.cc: a 1 s socket timeout on the handshake, then "Connection timed out; retrying..."
HANDSHAKE_TRIES = 3
REPLY_CAP_MIN = 16 << 20
REPLY_CAP_MAX = 256 << 20
BYTES_PER_RANK = 1024  # a rank's entry in the JSON answer is ~540 bytes (tests/fixtures/nccl-ras): twice that
LINE_CAP = 4096
ALLOWED = ("CLIENT PROTOCOL", "SET FORMAT", "STATUS", "MONITOR LIFECYCLE")  # every command hwtop may send


def deadline_s(factor: float = 1.0) -> float:
    """How long a STATUS may take: a gathering leg and the extra timeout, both 5 s x NCCL_RAS_TIMEOUT_FACTOR, and
    2 s to send the answer (factor 2: 22 s)."""
    return 2 * LEG_S * max(1.0, factor) + SEND_S


def reply_cap(ranks: int, comms: int) -> int:
    """The most bytes an answer may have: every rank of every communicator at twice its usual size, never under
    16 MiB nor over 256 MiB (a 4,096-rank job with 5 communicators: 40 MiB)."""
    return max(REPLY_CAP_MIN, min(REPLY_CAP_MAX, 2 * BYTES_PER_RANK * max(1, ranks) * max(1, comms)))


class RasError(Exception):
    """A query that failed: its message is the one line shown in the job's errors."""


# What a parser's own code raises on text it did not foresee (int() of a 5,000-digit count, an empty field, a
# missing key): the answer is unreadable, which is a RasError like any other, never a thread ended.
PARSE_ERRORS = (ValueError, IndexError, KeyError, TypeError, OverflowError)
_P = ParamSpec("_P")
_R = TypeVar("_R")


def one_line(error: BaseException, most: int = 100) -> str:
    text = str(error).strip()
    return (text.splitlines()[0] if text else type(error).__name__)[:most]


def unreadable(what: str) -> Callable[[Callable[_P, _R]], Callable[_P, _R]]:
    """A parser whose errors (PARSE_ERRORS) are a RasError of one line: "unreadable <what> (ValueError: ...)"."""

    def wrap(parse: Callable[_P, _R]) -> Callable[_P, _R]:
        @functools.wraps(parse)
        def guarded(*args: _P.args, **kwargs: _P.kwargs) -> _R:
            try:
                return parse(*args, **kwargs)
            except PARSE_ERRORS as error:
                raise RasError(f"unreadable {what} ({type(error).__name__}: {one_line(error)})") from None

        return guarded

    return wrap


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
        if not command.upper().startswith(ALLOWED) or command.upper().startswith("MONITOR") and \
                command.upper() != "MONITOR LIFECYCLE":  # hwtop's manners: never VERBOSE STATUS, MONITOR all
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


def connect(address: Address, deadline: float) -> tuple[socket.socket, _Conn, int | None]:
    """A connection past the handshake: a rank that does not answer CLIENT PROTOCOL within 1 s is left, and the
    connection made again (another listener of the port may take it), up to HANDSHAKE_TRIES times."""
    for attempt in range(HANDSHAKE_TRIES):
        try:
            sock = socket.create_connection((address.host, address.port), timeout=max(0.1, min(
                3.0, deadline - time.monotonic())))
        except OSError as error:
            raise RasError(f"cannot connect to {address}: {error.strerror or error}") from None
        conn = _Conn(sock, min(deadline, time.monotonic() + HANDSHAKE_S))
        try:
            conn.send(f"CLIENT PROTOCOL {PROTOCOL}")
            hello = conn.line()
        except (RasError, TimeoutError, OSError):
            sock.close()
            if attempt + 1 == HANDSHAKE_TRIES or time.monotonic() >= deadline:
                raise RasError(f"no handshake from {address} in {HANDSHAKE_TRIES} tries of {HANDSHAKE_S:g} s "
                               "(a stopped rank holding the port?)") from None
            continue
        if not hello.upper().startswith("SERVER PROTOCOL "):
            sock.close()
            raise RasError(f"not a RAS server: it answered {hello[:60]!r}")
        conn.deadline = deadline
        version = hello.split()[-1]
        return sock, conn, int(version) if version.isdigit() else None
    raise RasError(f"no handshake from {address}")  # not reached: the loop returns or raises


def _set_format(conn: _Conn, want_json: bool) -> str:
    if not want_json:
        return "text"
    conn.send("SET FORMAT json")
    answer = conn.line()
    if answer.upper() == "OK":
        return "json"
    if not answer.upper().startswith("ERROR"):
        raise RasError(f"SET FORMAT answered {answer[:60]!r}")
    return "text"


def query(address: Address, want_json: bool = True, factor: float = 1.0, cap: int = REPLY_CAP_MIN) -> RawReply:
    """Ask once for STATUS, within deadline_s(factor)."""
    deadline = time.monotonic() + deadline_s(factor)
    sock, conn, server_protocol = connect(address, deadline)
    try:
        form = _set_format(conn, want_json)
        conn.send("STATUS")
        body = conn.rest(cap)
    except TimeoutError:
        raise RasError("no complete answer before the deadline") from None
    except OSError as error:
        raise RasError(f"connection to {address} failed: {error.strerror or error}") from None
    finally:
        sock.close()
    return RawReply(form, body.decode("utf-8", "replace"), server_protocol)


def answers_json(address: Address) -> bool:
    """Whether the server has the JSON format (NCCL >= 2.28.7), asked without a STATUS: the handshake and
    `SET FORMAT json` only, which gather nothing from the job."""
    sock, conn, _ = connect(address, time.monotonic() + 3.0)
    try:
        return _set_format(conn, True) == "json"
    except TimeoutError:
        raise RasError("no answer to SET FORMAT before the deadline") from None
    except OSError as error:
        raise RasError(f"connection to {address} failed: {error.strerror or error}") from None
    finally:
        sock.close()


def monitor(address: Address) -> tuple[socket.socket, bytes]:
    """A MONITOR connection (NCCL >= 2.29): lifecycle events (PEER_NEW, PEER_DEAD) pushed as they happen, in JSON,
    at no gathering cost, and the bytes of them already read. The caller reads on (parse_json.parse_events) and
closes it."""
    sock, conn, _ = connect(address, time.monotonic() + 3.0)
    try:
        if _set_format(conn, True) != "json":
            raise RasError("MONITOR wants the JSON format, which this server lacks")
        conn.send("MONITOR LIFECYCLE")
        answer = conn.line()
        if answer.upper() != "OK":
            raise RasError(f"MONITOR refused: {answer[:60]!r}")
    except BaseException:
        sock.close()
        raise
    sock.settimeout(None)
    return sock, conn.buffer
