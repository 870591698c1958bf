"""The words on screen are true: the job view's NCCL line says when hwtop asks this release and why, another
job's answer and NCCL's own bugs in place of an error line; the demo's job says its policy too."""

from __future__ import annotations

from hwtop.model.job import JobSnapshot
from hwtop.model.ras import NcclView
from hwtop.probes.nccl_ras.versions import policy
from hwtop.widgets.job_ranks import nccl_lines


def plain(view: NcclView, width: int = 200) -> list[str]:
    job = JobSnapshot("job", (1,), "running", (), None, 0, nccl=view)
    return [line.plain for line in nccl_lines(job, width)]


def test_the_nccl_line_says_the_policy() -> None:
    words = policy((2, 27, 5), None, False).words
    lines = plain(NcclView("localhost:28028", "NCCL's default (pid 7 maps libnccl)", policy=words))
    assert "· NCCL 2.27.5: text answers only; STATUS can crash it (NVIDIA/nccl#2346, #1762); asked only when " \
           "the job stops, never while it makes progress" in " ".join(line.strip() for line in lines)
    narrow = plain(NcclView("localhost:28028", "x", policy=words), 60)  # 80 columns, less the panel's frame
    assert all(len(line) <= 60 for line in narrow) and "#2346, #1762" in "".join(narrow)
    assert any("asked only when the job stops" in line for line in narrow)


def test_another_jobs_answer_and_nccls_bugs_are_said() -> None:
    view = NcclView("localhost:28028", "x", queries=1, errors=("12:00:00 older error",),
                    foreign="the answer at localhost:28028 is another job's")
    assert plain(view)[-1].strip() == "the answer at localhost:28028 is another job's"
    noted = NcclView("localhost:28028", "x", queries=1, notes=("NCCL 2.28.7/2.28.9 wrote no comma: repaired",))
    assert plain(noted)[-1].strip() == "NCCL 2.28.7/2.28.9 wrote no comma: repaired"


def test_the_demo_says_its_policy() -> None:
    from hwtop.demo.ras import POLICY

    assert POLICY == "NCCL 2.30.7: asked in JSON"


def test_exporter_says_whether_hwtop_polls() -> None:
    from hwtop.exporter.job_metrics import nccl_families

    job = JobSnapshot("job", (1,), "running", (), None, 0,
                      nccl=NcclView("localhost:28028", "x", nccl_version="2.27.5", polled=False))
    [polled] = list(nccl_families(job, "train"))
    assert polled.name == "hwtop_nccl_ras_polled" and polled.samples == [(("train", "2.27.5"), 0.0)]
