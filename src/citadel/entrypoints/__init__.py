"""Entrypoints: CLI (and later HTTP and gRPC) — parse, call one use case, serialize."""
