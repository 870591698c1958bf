"""`hwtop record` and `hwtop replay`: every tick's snapshot and findings to a JSON-lines file, and played back as
a snapshot source with pause, step, seek and speed."""
