"""`hwtop fleet`: many boxes at once, read from their exporters (hwtop or NVIDIA's dcgm-exporter) or from a
Prometheus server that scrapes them."""
