"""Trust metrics: a Prometheus registry, and a counting fake for tests."""
