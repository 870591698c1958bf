"""The demo machines (`--demo PROFILE`, `--scenario STORY`): a fake NVML library that real nvidia-ml-py loads
(demo/nvml/), a simulated host and job, and the stories that stage a problem for the advice to find."""
