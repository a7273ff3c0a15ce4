"""Figures of dong2025 (being written)."""

FIGURES: dict = {}
