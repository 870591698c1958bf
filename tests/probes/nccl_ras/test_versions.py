"""Every NCCL release's answers, as NCCL's own formatting code printed them (tests/fixtures/nccl-ras/, built from
client_support.cc at each tag): the stand-in speaks each byte for byte, and the parsers read each, one test per
release, bugs included."""

from __future__ import annotations

import re

import pytest

from hwtop.model.ras import RasReply
from hwtop.probes.nccl_ras.client import RasError
from hwtop.probes.nccl_ras.parse_json import NOTE_COMMA, parse_events, parse_json
from hwtop.probes.nccl_ras.parse_text import NOTE_GARBLED, NOTE_ZEROED, parse_text
from tests.nccl_ras_scenarios import FIXTURES, SCENARIOS, VERSIONS, fixture
from tests.nccl_ras_standin import event_reply, json_reply, text_reply


def _clockless(text: str) -> str:
    """The harness's clock (collection time, timestamp) is the one thing a stand-in cannot print the same."""
    text = re.sub(r"Communicators\.\.\. \([\d.]+s\)", "Communicators... (Xs)", text)
    text = re.sub(r'"timestamp": "[^"]*"', '"timestamp": ""', text)
    return re.sub(r'"collection_time_sec": [\d.]+', '"collection_time_sec": 0', text)


CASES = [(v, name, ext) for v in VERSIONS for name in SCENARIOS for ext in ("txt", "json")
         if (FIXTURES / v / f"{name}.{ext}").exists()
         and not (name == "lost2" and ext == "txt" and v != "2.30.7")]  # nccl#1762's walk is NCCL's alone


@pytest.mark.parametrize(("version", "name", "ext"), CASES)
def test_standin_prints_what_nccl_prints(version: str, name: str, ext: str) -> None:
    made = SCENARIOS[name]()
    got = text_reply(made, version) if ext == "txt" else json_reply(made, version)
    assert _clockless(got) == _clockless(fixture(version, f"{name}.{ext}"))


def test_standin_events_are_ncclss() -> None:
    from tests.nccl_ras_scenarios import healthy

    ranks = healthy()[0].ranks
    made = event_reply("PEER_NEW", ranks[5]) + event_reply("PEER_DEAD", ranks[6])
    assert _clockless(made) == _clockless(fixture("2.30.7", "monitor.json"))
    made = event_reply("PEER_NEW", ranks[5], "text") + event_reply("PEER_DEAD", ranks[6], "text")
    stamp = re.compile(r"^\[[^]]*\]", re.M)
    assert stamp.sub("[]", made) == stamp.sub("[]", fixture("2.30.7", "monitor.txt"))


def _by_rank(reply: RasReply, index: int = 0) -> dict:
    return {r.rank: r for r in reply.comms[index].ranks}


def test_2_24_text() -> None:
    """One "collective" count; UNKNOWN for a rank whose process answered without the communicator; missing ranks
    listed by number alone."""
    hang = parse_text(fixture("2.24.3", "hang.txt"))
    assert hang.nccl_version == "2.24.3"
    five = _by_rank(hang)[5]
    assert (five.count("collective"), five.pid, five.host) == (6650, 4005, "10.0.0.2")
    assert dict(hang.comms[0].rest_counts) == {"collective": 6651}
    nocomm = _by_rank(parse_text(fixture("2.24.3", "nocomm.txt")))[3]
    assert nocomm.state == "UNKNOWN" and nocomm.pid is None
    lost = parse_text(fixture("2.24.3", "lost.txt"))
    assert sorted(r.rank for r in lost.comms[0].ranks if r.missing) == [6, 9]
    assert (lost.processes_missing, lost.processes_dead) == (1, 1)
    assert [(p.pid, p.dead) for p in lost.processes] == [(4009, False), (4006, True)]


def test_2_27_text() -> None:
    """PyTorch's pins (2.27.5, 2.27.7): per-operation counts, counts only past 10 ranks, NOCOMM, a rank whose
    process is not in the peer list, a communicator still initialising, and NCCL's own bugs said."""
    many = parse_text(fixture("2.27.5", "many.txt")).comms[0]
    assert many.size == 64 and dict(many.rest_counts) == {"AllReduce": 6650}
    assert [r.rank for r in many.ranks] == [40] and many.ranks[0].count("AllReduce") == 6648
    assert many.unnamed_behind("AllReduce", 6650) == 14  # "14 ranks have launched up to operation 6649"
    assert _by_rank(parse_text(fixture("2.27.5", "nocomm.txt")))[3].state == "NOCOMM"
    lost = parse_text(fixture("2.27.5", "lost.txt")).comms[0]
    states = {r.rank: (r.state, r.pid) for r in lost.ranks}
    assert states == {6: ("DEAD", 4006), 9: ("UNRESPONSIVE", 4009)} and lost.missing_count == 2
    stranger = _by_rank(parse_text(fixture("2.27.5", "notfound.txt")))[2]
    assert (stranger.host, stranger.pid, stranger.count("AllReduce")) == ("unknown", None, 41)
    assert parse_text(fixture("2.27.5", "init.txt")).comms[0].initialising() == 3
    errors = _by_rank(parse_text(fixture("2.27.5", "errors.txt")))
    assert (errors[4].async_error, errors[5].async_error, errors[1].state) == (6, 2, "ABORT")
    garbled = parse_text(fixture("2.27.5", "lost2.txt"))
    assert NOTE_GARBLED in garbled.notes and not garbled.comms  # nccl#1762: nothing read past the data is used
    assert [(p.pid, p.dead) for p in garbled.processes] == [(4009, False), (4006, True)]  # NCCL's peer table
    zeroed = parse_text(fixture("2.27.5", "zeroed.txt"))
    assert NOTE_ZEROED in zeroed.notes and [c.size for c in zeroed.comms] == [8]  # no phantom INIT group
    assert not any(c.initialising() for c in zeroed.comms)


def test_2_28_7_json_missing_comma_repaired() -> None:
    """2.28.7 and 2.28.9 write invalid JSON whenever a rank is missing: repaired, and said."""
    text = fixture("2.28.7", "lost.json")
    with pytest.raises(Exception):  # noqa: B017, PT011 - any JSON reader refuses it
        import json

        json.loads(text)
    reply = parse_json(text)
    assert reply.notes == (NOTE_COMMA,)
    states = {r.rank: (r.state, r.pid, r.host) for r in reply.comms[0].ranks if r.missing}
    assert states == {6: ("DEAD", 4006, "10.0.0.2"), 9: ("UNRESPONSIVE", 4009, "10.0.0.3")}
    nocomm = parse_json(fixture("2.28.7", "nocomm.json"))
    assert _by_rank(nocomm)[3].state == "NOCOMM"
    twins = parse_json(fixture("2.28.7", "twins.json"))
    assert [c.key for c in twins.comms] == [("0xc0ffee", "0x5d1f:0x1111"), ("0xc0ffee", "0x5d20:0x2222")]
    assert NOTE_GARBLED in parse_text(fixture("2.28.7", "lost2.txt")).notes  # its text is 2.26's
    walked = parse_json(fixture("2.28.7", "lost2.json"))  # its JSON dump walks the communicators right
    assert sorted(c.size for c in walked.comms) == [4, 4, 4, 4, 16]


def test_2_30_json_text_and_events() -> None:
    lost = parse_json(fixture("2.30.7", "lost.json"))
    assert lost.notes == () and lost.nccl_version == "2.30.7"
    assert len(parse_text(fixture("2.30.7", "lost2.txt")).comms) == 4  # fixed in 2.29.2
    tp = parse_json(fixture("2.30.7", "tp.json"))
    assert len(tp.comms) == 11 and {c.size for c in tp.comms} == {16, 8, 2}
    zeroed = parse_json(fixture("2.30.7", "zeroed.json"))
    assert NOTE_ZEROED in zeroed.notes and [c.size for c in zeroed.comms] == [8]
    stranger = _by_rank(parse_json(fixture("2.30.7", "notfound.json")))[2]
    assert (stranger.host, stranger.pid) == ("unknown", None)
    for name in ("monitor.json", "monitor.txt"):
        events, rest, lost = parse_events((FIXTURES / "2.30.7" / name).read_bytes())
        assert [(e.event, e.host, e.pid, e.gpus) for e in events] == [
            ("PEER_NEW", "10.0.0.2", 4005, (1,)), ("PEER_DEAD", "10.0.0.2", 4006, (2,))] and rest == b"" and lost == []


def test_events_arrive_in_pieces() -> None:
    data = (FIXTURES / "2.30.7" / "monitor.json").read_bytes()
    first, rest, _ = parse_events(data[:100])
    assert first == [] and rest == data[:100]
    events, rest, _ = parse_events(rest + data[100:])
    assert len(events) == 2 and rest == b""


def test_broken_json_that_is_not_nccls_comma_is_one_line() -> None:
    with pytest.raises(RasError, match="broken JSON answer") as caught:
        parse_json(fixture("2.30.7", "lost.json").replace('"host": "10.0.0.2"', '"host": "10.0.0.2"x', 1))
    assert "\n" not in str(caught.value)
