"""Figures of chua2024 (being written)."""

FIGURES: dict = {}
