"""`hwtop fleet`'s screens: the app (it swaps FleetFrames and routes them), the hosts table, one host's GPUs,
the job list and one job's ranks, each in its own module."""
