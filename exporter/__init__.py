"""`hwtop export`: the latest snapshot as Prometheus metrics, GPU series named as NVIDIA's dcgm-exporter names
them, so existing Grafana dashboards work unchanged."""
