"""Test doubles that speak real protocols (loopback servers), for integration tests."""
