"""Figures of balle2018 (being written)."""

FIGURES: dict = {}
