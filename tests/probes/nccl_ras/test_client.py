"""The RAS client against the stand-in (tests/nccl_ras_standin.py): the handshake, both formats, the text
fall-back of NCCL before 2.28.7, and one line for each way a query fails."""

from __future__ import annotations

import socket

import pytest

from hwtop.probes.nccl_ras.client import Address, RasError, parse_address, query
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
    assert server.conns[0].lines == ["CLIENT PROTOCOL 2", "TIMEOUT 5", "SET FORMAT json", "STATUS"]
    reply = parse_reply(raw)
    comm = reply.comms[0]
    assert comm.size == 8 and comm.hash == "0x27a079b828ff1a75"
    five = next(r for r in comm.ranks if r.rank == 5)
    assert (five.host, five.pid, five.nvml_dev, five.count("AllReduce")) == ("10.0.0.3", 4055, 1, 6649)
    assert comm.most("AllReduce") == 6650 and reply.nccl_version == "2.30.3"


def test_old_nccl_falls_back_to_text(standin) -> None:
    server = standin(json=False)
    raw = query(Address("127.0.0.1", server.port))
    assert raw.format == "text"
    assert server.conns[0].lines[2] == "SET FORMAT json" and server.conns[0].lines[-1] == "STATUS"
    reply = parse_reply(raw)
    comm = reply.comms[0]
    assert comm.size == 8 and dict(comm.rest_counts) == {"AllReduce": 6650}
    five = next(r for r in comm.ranks if r.rank == 5)
    assert (five.host, five.pid, five.nvml_dev, five.count("AllReduce")) == ("10.0.0.3", 4055, 1, 6649)


def test_refused_port_is_one_line() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # bound, never listening: refused
        with pytest.raises(RasError, match=r"cannot connect to 127.0.0.1:\d+"):
            query(Address("127.0.0.1", port), deadline_s=2.0)


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
    server = standin(json=False, raw=lambda n, text: "Hello from something else\n")
    with pytest.raises(RasError, match="unknown answer format"):
        parse_reply(query(Address("127.0.0.1", server.port)))


def test_not_a_ras_server() -> None:
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(1)
        port = listener.getsockname()[1]
        import threading

        def http() -> None:
            conn, _ = listener.accept()
            conn.recv(100)
            conn.sendall(b"HTTP/1.1 400 Bad Request\r\n\r\n")
            conn.close()

        threading.Thread(target=http, daemon=True).start()
        with pytest.raises(RasError, match="not a RAS server"):
            query(Address("127.0.0.1", port), deadline_s=3.0)


def test_answer_cap(standin) -> None:
    server = standin()
    with pytest.raises(RasError, match="cut, not read"):
        query(Address("127.0.0.1", server.port), cap=1000)


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
    for command in ("VERBOSE STATUS", "MONITOR", "MONITOR all"):
        with pytest.raises(ValueError, match="not a command hwtop sends"):
            conn.send(command)
    conn.sock.close()
