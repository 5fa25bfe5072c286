"""A metrics fake that counts in plain dictionaries, for tests."""

from __future__ import annotations

from collections import Counter


class CountingMetrics:
    def __init__(self) -> None:
        self.answers: Counter[str] = Counter()
        self.rejections: Counter[str] = Counter()
        self.resolutions: Counter[str] = Counter()
        self.denials = 0
        self.fabricated = 0
        self.stages: Counter[str] = Counter()
        self.supports: Counter[str] = Counter()
        self.answerability_scores: list[float] = []

    def answer(self, outcome: str) -> None:
        self.answers[outcome] += 1

    def rejection(self, reason: str) -> None:
        self.rejections[reason] += 1

    def resolution(self, state: str) -> None:
        self.resolutions[state] += 1

    def support(self, label: str) -> None:
        self.supports[label] += 1

    def display_denial(self) -> None:
        self.denials += 1

    def fabricated_link(self) -> None:
        self.fabricated += 1

    def stage(self, name: str, seconds: float) -> None:
        self.stages[name] += 1

    def answerability(self, score: float) -> None:
        self.answerability_scores.append(score)
