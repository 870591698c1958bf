"""The Flight Recorder reader on real dumps (gloo, 3 ranks, made by torch here) laid out as torch writes them, and
on the files a shared /tmp may hold instead: another user's, a link, a half-written dump, an earlier run's."""

from __future__ import annotations

import os
import pickle
from pathlib import Path

import pytest

from hwtop.probes.flight_recorder import files, unpickle
from hwtop.probes.flight_recorder.reader import FlightRecorderReader, RankProcess
from tests.probes.flight_recorder.conftest import WORLD, fake_proc, lay_out

PID = 4242


def _reader(tmp_path: Path, started: float) -> FlightRecorderReader:
    fake_proc(tmp_path / "proc", PID, started)
    return FlightRecorderReader(proc=str(tmp_path / "proc"))


def _env(tmp_path: Path) -> dict[str, str]:
    return {"TORCH_FR_DUMP_TEMP_FILE": f"{tmp_path}/fr_rank_", "TORCH_FR_BUFFER_SIZE": "64"}


def test_a_hang_read_from_real_dumps_says_who_launched_and_who_completed_which_collective(tmp_path: Path) -> None:
    times = lay_out("hang", tmp_path)
    reader = _reader(tmp_path, min(times.values()) - 60)
    got = reader.read([RankProcess(PID, 0, _env(tmp_path))])
    rank0 = got[PID]
    assert rank0.buffer == 64 and rank0.enabled and rank0.refused is None and rank0.dump is not None
    (group,) = rank0.dump.groups
    assert (group.pg, group.desc, group.size, group.launched, group.completed) == ("0", "default_pg", 3, 26, 25)
    assert group.pending is not None and (group.pending.op, group.pending.seq, group.pending.completed) == \
        ("all_reduce", 26, False)
    assert group.pending.site == "ddp_hang.py:65 main"  # loss.backward(): DDP's gradient all-reduce
    assert rank0.dump.dumped_at == times[0]
    assert group.pending.created_at is not None and 40 < times[0] - group.pending.created_at < 60


def test_each_rank_is_read_at_its_own_path(tmp_path: Path) -> None:
    times = lay_out("hang", tmp_path)
    for rank in range(WORLD):
        fake_proc(tmp_path / "proc", PID + rank, min(times.values()) - 60)
    reader = FlightRecorderReader(proc=str(tmp_path / "proc"))
    got = reader.read([RankProcess(PID + r, r, _env(tmp_path)) for r in range(WORLD)])
    launched = {r: got[PID + r].dump.groups[0].launched for r in range(WORLD)}  # type: ignore[union-attr]
    assert launched == {0: 26, 1: 25, 2: 26}  # rank 1 never launched #26
    assert got[PID + 1].dump.groups[0].pending is None  # type: ignore[union-attr]


def test_a_planted_pickle_at_the_prefix_runs_nothing(tmp_path: Path) -> None:
    """The test fails if the planted file's code runs: it would create the marker."""
    marker = tmp_path / "ran"

    class Planted:
        def __reduce__(self) -> tuple[object, tuple[str]]:
            return (os.mkdir, (str(marker),))

    for rank, payload in enumerate((Planted(), {"entries": [Planted()]}, [1, {"x": Planted()}])):
        (tmp_path / f"fr_rank_{rank}").write_bytes(pickle.dumps(payload, protocol=rank + 2))
    pickle.loads((tmp_path / "fr_rank_0").read_bytes())  # the plant works as planted: loaded plainly, it runs
    assert marker.is_dir()
    marker.rmdir()
    for rank in range(WORLD):
        fake_proc(tmp_path / "proc", PID + rank, 0.0)
    got = FlightRecorderReader(proc=str(tmp_path / "proc")).read(
        [RankProcess(PID + r, r, _env(tmp_path)) for r in range(WORLD)])
    assert not marker.exists()
    for rank in range(WORLD):
        assert got[PID + rank].dump is None
        assert "REDUCE" in (got[PID + rank].refused or "") or "GLOBAL" in (got[PID + rank].refused or "")


def _memo_flood(entries: int) -> bytes:
    """A dump whose entries are one entry referenced again and again: two bytes (BINGET) an entry."""
    entry = {"collective_seq_id": 1, "process_group": ("0", "default_pg"), "state": "completed",
             "frames": [{"name": "main", "filename": "train.py", "line": 3}] * 5}
    return pickle.dumps({"entries": [entry] * entries}, protocol=2)


def test_a_dump_past_the_budgets_is_refused_in_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(unpickle, "MAX_OPCODES", 10_000)
    (tmp_path / "fr_rank_0").write_bytes(_memo_flood(20_000))
    got = _reader(tmp_path, 0.0).read([RankProcess(PID, 0, _env(tmp_path))])[PID]
    assert got.dump is None
    assert got.refused == f"{tmp_path}/fr_rank_0: more than 10,000 opcodes: more than a dump holds, not read"


@pytest.mark.slow
def test_the_memo_amplification_dump_is_refused_under_the_real_budgets(tmp_path: Path) -> None:
    """8 MiB of memo references (4 M entries when built) at a rank's prefix: refused before it is built."""
    (tmp_path / "fr_rank_0").write_bytes(_memo_flood(4 << 20))
    assert (tmp_path / "fr_rank_0").stat().st_size < files.MAX_DUMP_BYTES
    got = _reader(tmp_path, 0.0).read([RankProcess(PID, 0, _env(tmp_path))])[PID]
    assert got.dump is None
    assert got.refused == f"{tmp_path}/fr_rank_0: more than 2,000,000 opcodes: more than a dump holds, not read"


def test_a_link_at_the_prefix_is_not_followed(tmp_path: Path) -> None:
    lay_out("healthy", tmp_path, prefix="real_")
    os.symlink(tmp_path / "real_0", tmp_path / "fr_rank_0")
    got = _reader(tmp_path, 0.0).read([RankProcess(PID, 0, _env(tmp_path))])[PID]
    assert got.dump is None and got.refused == f"{tmp_path}/fr_rank_0 is a symbolic link"


def test_a_link_swapped_in_after_the_look_is_not_followed(tmp_path: Path) -> None:
    lay_out("healthy", tmp_path)
    found = files.look(f"{tmp_path}/fr_rank_0", os.getuid(), files.HOST)
    assert found is not None
    os.replace(tmp_path / "fr_rank_1", tmp_path / "other")
    os.unlink(tmp_path / "fr_rank_0")
    os.symlink(tmp_path / "other", tmp_path / "fr_rank_0")
    with pytest.raises(files.Refused, match="symbolic link"):
        files.read(found, os.getuid())


def test_another_users_file_is_not_read_nor_any_file_where_the_user_is_unknown(tmp_path: Path) -> None:
    lay_out("healthy", tmp_path)
    with pytest.raises(files.Refused, match=f"owned by uid {os.getuid()}, not the job's"):
        files.look(f"{tmp_path}/fr_rank_0", os.getuid() + 1, files.HOST)
    for check in (lambda: files.look(f"{tmp_path}/fr_rank_0", None, files.HOST),
                  lambda: files.read(files.Found(f"{tmp_path}/fr_rank_0", 0.0, (0, 0, 0, 0)), None)):
        with pytest.raises(files.Refused, match="the job's user is unknown"):
            check()


def test_a_dump_over_the_bound_is_not_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    lay_out("healthy", tmp_path)
    monkeypatch.setattr(files, "MAX_DUMP_BYTES", 4096)
    got = _reader(tmp_path, 0.0).read([RankProcess(PID, 0, _env(tmp_path))])[PID]
    assert got.dump is None and "over the 4096 bytes a dump may be" in (got.refused or "")


def test_a_dump_being_written_is_said_then_read_once_whole(tmp_path: Path) -> None:
    lay_out("hang", tmp_path)
    whole = (tmp_path / "fr_rank_0").read_bytes()
    (tmp_path / "fr_rank_0").write_bytes(whole[: len(whole) // 2])  # DebugInfoWriter truncates, then writes
    reader = _reader(tmp_path, 0.0)
    first = reader.read([RankProcess(PID, 0, _env(tmp_path))])[PID]
    assert first.dump is None and "not a whole pickle" in (first.refused or "")
    (tmp_path / "fr_rank_0").write_bytes(whole)
    os.utime(tmp_path / "fr_rank_0", (1e9 + 5, 1e9 + 5))
    second = reader.read([RankProcess(PID, 0, _env(tmp_path))])[PID]
    assert second.dump is not None and second.dump.groups[0].launched == 26


def test_an_earlier_runs_dump_at_the_same_prefix_is_not_this_runs(tmp_path: Path) -> None:
    times = lay_out("hang", tmp_path)
    got = _reader(tmp_path, times[0] + 3600).read([RankProcess(PID, 0, _env(tmp_path))])[PID]
    assert got.dump is None and "written before the rank started" in (got.refused or "")


def test_a_dump_is_parsed_again_only_when_its_file_changes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    lay_out("hang", tmp_path)
    reader = _reader(tmp_path, 0.0)
    calls = []
    real = files.read
    monkeypatch.setattr("hwtop.probes.flight_recorder.reader.read", lambda *a: calls.append(1) or real(*a))
    for _ in range(3):
        assert reader.read([RankProcess(PID, 0, _env(tmp_path))])[PID].dump is not None
    assert len(calls) == 1


def test_without_a_prefix_set_the_defaults_of_every_torch_version_are_looked_at(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / ".cache" / "torch").mkdir(parents=True)
    lay_out("healthy", home / ".cache" / "torch", prefix="comm_lib_trace_rank_")
    got = _reader(tmp_path, 0.0).read([RankProcess(PID, 1, {"HOME": str(home)})])[PID]
    assert got.buffer is None and got.prefix == f"{home}/.cache/torch/comm_lib_trace_rank_"
    assert got.dump is not None and got.dump.groups[0].launched == 812

