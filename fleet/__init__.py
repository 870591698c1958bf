"""`hwtop fleet`: many boxes at once, read from their hwtop exporters (or NVIDIA's dcgm-exporters)."""
