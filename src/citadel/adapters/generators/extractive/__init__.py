"""The built-in extractive generator: model-free, it quotes the evidence that answers."""

from citadel.adapters.generators.extractive.generator import ExtractiveGenerator

__all__ = ["ExtractiveGenerator"]
