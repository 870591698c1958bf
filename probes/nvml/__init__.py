"""NVML, one job per module, read through probes/gpu.py's NvmlProbe:

- session: the bindings, nvmlInit/nvmlShutdown, the library and driver checks, the tick's clock, calls counted
- device: one GPU's reader, owning its tiers (static, MIG mode, slow, live); handle: its guarded call
- capabilities: every question asked (Query) and what a GPU answers to each; calls: what an error means
- pcie: PCIe and NVLink traffic (pcie_wide: 32-bit counters widened and polled; counters: rates from counters)
- gpm: Hopper's activity metrics; processes and holders: who is on a GPU, and who holds its device file here
- events: XID events; slow: calls too slow for a tick; record: a recording view of the bindings
"""
