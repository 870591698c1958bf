"""One tick at a time: `Session.tick() -> Frame` over a snapshot source (the live Sampler, a demo, a recording),
its controls (workload, job focus, replay) and the configuration (a config file, the themes)."""
