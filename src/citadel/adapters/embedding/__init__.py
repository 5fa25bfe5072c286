"""Embedders: text to unit-length vectors behind the Embedder port.

``MiniLmEmbedder`` runs the packaged all-MiniLM-L6-v2 (int8 ONNX) on the CPU;
``HashingEmbedder`` is the deterministic, model-free fake that tests use.
"""
