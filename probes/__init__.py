"""Headless readers of the machine (/proc, /sys, NVML, cgroups, py-spy): each returns typed records of `hwtop.model`
and never draws, advises or imports Textual or torch. The Sampler (session/sampler.py) calls them once a tick:

    from hwtop.session.sampler import Sampler
    snapshot = Sampler().sample()
"""
