"""The RAS client against the stand-in (tests/nccl_ras_standin.py), with ncclras' manners: the handshake within
1 s or the connection made again (a stopped rank holding the port), no TIMEOUT (the server's default already
follows the job's NCCL_RAS_TIMEOUT_FACTOR), a deadline and an answer cap sized by the job, the JSON format asked
for without a STATUS, MONITOR's events; and one line for each way a query fails."""

from __future__ import annotations

import socket
import threading
import time

import pytest

from hwtop.probes.nccl_ras import client
from hwtop.probes.nccl_ras.client import Address, RasError, parse_address, query, reply_cap
from hwtop.probes.nccl_ras.parse_json import parse_events
from hwtop.probes.nccl_ras.watch import parse_reply
from tests.nccl_ras_standin import RasStandIn, StandComm, StandRank


def eight(behind: int | None = 5, at: int = 6650) -> list[StandComm]:
    ranks = [StandRank(i, f"10.0.0.{1 + i // 2}", 4050 + i, i % 2, {"AllReduce": at - (i == behind)})
             for i in range(8)]
    return [StandComm(0x27A079B828FF1A75, ranks)]


@pytest.fixture
def standin():
    servers: list[RasStandIn] = []

    def make(**kwargs) -> RasStandIn:
        server = RasStandIn(kwargs.pop("state", lambda n: eight()), **kwargs)
        servers.append(server)
        return server

    yield make
    for server in servers:
        server.close()


def test_json_handshake_and_answer(standin) -> None:
    server = standin()
    raw = query(Address("127.0.0.1", server.port))
    assert raw.format == "json" and raw.server_protocol == 2
    assert server.conns[0].lines == ["CLIENT PROTOCOL 2", "SET FORMAT json", "STATUS"]  # no TIMEOUT
    reply = parse_reply(raw)
    comm = reply.comms[0]
    assert comm.size == 8 and comm.hash == "0x27a079b828ff1a75" and comm.key == (comm.hash, "0x1:0x2")
    five = next(r for r in comm.ranks if r.rank == 5)
    assert (five.host, five.pid, five.nvml_dev, five.count("AllReduce")) == ("10.0.0.3", 4055, 1, 6649)
    assert comm.most("AllReduce") == 6650 and reply.nccl_version == "2.30.7"


def test_old_nccl_falls_back_to_text(standin) -> None:
    server = standin(version="2.27.5")
    raw = query(Address("127.0.0.1", server.port))
    assert raw.format == "text"
    assert server.conns[0].lines == ["CLIENT PROTOCOL 2", "SET FORMAT json", "STATUS"]
    reply = parse_reply(raw)
    comm = reply.comms[0]
    assert comm.size == 8 and dict(comm.rest_counts) == {"AllReduce": 6650} and reply.nccl_version == "2.27.5"
    five = next(r for r in comm.ranks if r.rank == 5)
    assert (five.host, five.pid, five.nvml_dev, five.count("AllReduce")) == ("10.0.0.3", 4055, 1, 6649)


def test_json_asked_without_a_status(standin) -> None:
    old, new = standin(version="2.27.5"), standin(version="2.28.7")
    assert not client.answers_json(Address("127.0.0.1", old.port))
    assert client.answers_json(Address("127.0.0.1", new.port))
    for server in (old, new):
        assert server.statuses == 0 and server.conns[0].lines == ["CLIENT PROTOCOL 2", "SET FORMAT json"]


@pytest.mark.slow  # over the fast suite's minute on two cores (--durations)
def test_a_stopped_rank_holding_the_port_is_left(standin, monkeypatch) -> None:
    """ncclras: a 1 s handshake deadline, then the connection made again; the kernel's SO_REUSEPORT choice may
    have been a rank that is stopped (SIGSTOP, a debugger). (The second shortened here.)"""
    assert client.HANDSHAKE_S == 1.0
    monkeypatch.setattr(client, "HANDSHAKE_S", 0.25)
    server = standin(mute=1)
    start = time.monotonic()
    raw = query(Address("127.0.0.1", server.port))
    assert raw.format == "json" and time.monotonic() - start >= client.HANDSHAKE_S
    assert [c.lines for c in server.conns] == [["CLIENT PROTOCOL 2"], ["CLIENT PROTOCOL 2", "SET FORMAT json",
                                                                      "STATUS"]]
    with pytest.raises(RasError, match=r"no handshake .* in 3 tries of 0.25 s"):
        query(Address("127.0.0.1", standin(mute=9).port))


@pytest.mark.slow  # over the fast suite's minute on two cores (--durations)
def test_deadline_follows_the_timeout_factor(standin, monkeypatch) -> None:
    """At factor 2 the server may gather for twice as long (5 s x factor per leg, and its extra timeout): hwtop
    waits as long rather than override the job's factor with TIMEOUT 5, as it once did."""
    assert client.deadline_s(1) == 12.0 and client.deadline_s(2) == 22.0
    monkeypatch.setattr(client, "LEG_S", 0.2)
    monkeypatch.setattr(client, "SEND_S", 0.1)
    slow = standin(delay_s=0.7)  # a gathering that waited on a slow leg
    with pytest.raises(RasError, match="deadline"):
        query(Address("127.0.0.1", slow.port), factor=1)
    assert query(Address("127.0.0.1", slow.port), factor=2).format == "json"
    assert all(not line.startswith("TIMEOUT") for line in slow.sent())


def test_answer_cap_sized_by_the_job(standin) -> None:
    """A 4,096-rank job with five communicators answers ~20 MB: read; the same bytes from an 8-rank job are not."""
    big = "x" * 20_000_000
    server = standin(raw=lambda n, text: big)
    assert reply_cap(4096, 5) == 40 << 20 and reply_cap(8, 1) == 16 << 20 and reply_cap(10**6, 64) == 256 << 20
    raw = query(Address("127.0.0.1", server.port), cap=reply_cap(4096, 5))
    assert len(raw.text) == 20_000_000
    with pytest.raises(RasError, match="answer over 16 MiB: cut, not read"):
        query(Address("127.0.0.1", server.port), cap=reply_cap(8, 1))


def test_monitor_events(standin) -> None:
    server = standin(version="2.30.7")
    sock, data = client.monitor(Address("127.0.0.1", server.port))
    with sock:
        assert server.wait_watchers(1)
        server.event("PEER_DEAD", eight()[0].ranks[6])
        sock.settimeout(10)
        events: list = []
        while not events:
            data += sock.recv(4096)
            events, data, _ = parse_events(data)
    assert [(e.event, e.host, e.pid) for e in events] == [("PEER_DEAD", "10.0.0.4", 4056)]
    assert server.conns[0].lines == ["CLIENT PROTOCOL 2", "SET FORMAT json", "MONITOR LIFECYCLE"]
    with pytest.raises(RasError, match="MONITOR refused"):
        client.monitor(Address("127.0.0.1", standin(version="2.28.7").port))


def test_refused_port_is_one_line() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # bound, never listening: refused
        with pytest.raises(RasError, match=r"cannot connect to 127.0.0.1:\d+"):
            query(Address("127.0.0.1", port))


def test_cut_answer_is_broken_json(standin) -> None:
    server = standin(cut={0})
    with pytest.raises(RasError, match="broken JSON answer"):
        parse_reply(query(Address("127.0.0.1", server.port)))


def test_unescaped_hostile_host_breaks_json_in_one_line(standin) -> None:
    def hostile(n: int) -> list[StandComm]:
        comms = eight()
        comms[0].ranks[3].host = 'evil"host\x1b[31m'
        return comms

    server = standin(state=hostile)
    with pytest.raises(RasError) as caught:
        parse_reply(query(Address("127.0.0.1", server.port)))
    assert "\n" not in str(caught.value) and str(caught.value).startswith("broken JSON answer")


def test_escaped_hostile_host_kept_literally(standin) -> None:
    server = standin(raw=lambda n, text: text.replace('"10.0.0.2"', '"10.0.0.2\\u001b[2J\\nrank 0 fine"', 1))
    reply = parse_reply(query(Address("127.0.0.1", server.port)))
    assert any(r.host == "10.0.0.2\x1b[2J\nrank 0 fine" for r in reply.comms[0].ranks)


def test_unknown_format_is_one_line(standin) -> None:
    server = standin(version="2.27.5", raw=lambda n, text: "Hello from something else\n")
    with pytest.raises(RasError, match="unknown answer format"):
        parse_reply(query(Address("127.0.0.1", server.port)))


def test_not_a_ras_server() -> None:
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(1)
        port = listener.getsockname()[1]

        def http() -> None:
            conn, _ = listener.accept()
            conn.recv(100)
            conn.sendall(b"HTTP/1.1 400 Bad Request\r\n\r\n")
            conn.close()

        threading.Thread(target=http, daemon=True).start()
        with pytest.raises(RasError, match="not a RAS server"):
            query(Address("127.0.0.1", port))


@pytest.mark.parametrize(("text", "expected"), [
    ("localhost:28028", Address("localhost", 28028)), ("10.1.2.3:5", Address("10.1.2.3", 5)),
    ("[::1]:28028", Address("::1", 28028)), ("0.0.0.0:9", Address("localhost", 9))])
def test_parse_address(text: str, expected: Address) -> None:
    assert parse_address(text) == expected


@pytest.mark.parametrize("text", ["localhost", "host:", ":80", "h:99999", "h:x", "[::1]"])
def test_bad_address(text: str) -> None:
    with pytest.raises(ValueError, match="not HOST:PORT"):
        parse_address(text)


def test_no_command_outside_the_manners() -> None:
    from hwtop.probes.nccl_ras.client import _Conn

    conn = _Conn(socket.socket(), 0.0)
    for command in ("VERBOSE STATUS", "MONITOR", "MONITOR all", "MONITOR trace", "TIMEOUT 5"):
        with pytest.raises(ValueError, match="not a command hwtop sends"):
            conn.send(command)
    conn.sock.close()
