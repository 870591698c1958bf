"""A client of NCCL's RAS service (NCCL >= 2.24): the job's own view of every rank on every node.

Read from NVIDIA/nccl at 5067397c2676d5aed50042fc39e5c8ee96eb0027: docs/userguide/source/troubleshooting/ras.rst
(the commands, both formats, what a mismatch means) and src/ras/client_support.cc (how the server answers each
line). Its manners come from NCCL's own issues about queries that hurt jobs: #1718 (a tight polling loop),
#1762 (`VERBOSE STATUS` on 128 GPUs), #1669 and #2346 (queries while communicators initialise). So hwtop asks
only `STATUS`, never `VERBOSE STATUS` nor `MONITOR`; one connection at a time, from its own thread, at most once
every 10 s by default (never more often than every 5 s), and not while a communicator initialises.

client.py: one query; parse_json.py and parse_text.py: the two formats; track.py: what changes across queries;
watch.py: when to ask and where, joined with the focused job."""
