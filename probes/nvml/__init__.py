"""NVML, one job per module: what an error means (calls), the counters read as counters (counters, pcie_wide),
XID events (events), calls too slow for a tick (slow), process lists by driver generation (processes), and a
recording view of the bindings (record). probes/gpu.py's NvmlProbe reads the GPUs through them."""
