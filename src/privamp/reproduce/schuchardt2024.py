"""Figures of schuchardt2024 (being written)."""

FIGURES: dict = {}
