"""Integrations with the tools users train and account with: PyTorch samplers
(:mod:`.torch`), Opacus (:mod:`.opacus`), dp-accounting events (:mod:`.dp_accounting`).
Import the submodule you need; each imports its optional dependency lazily or on import."""
