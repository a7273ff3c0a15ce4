"""privamp's queries run single-threaded BLAS by default (issue 28), restore the caller's
setting afterwards, and honour the switch (set_blas_threads / PRIVAMP_BLAS_THREADS)."""

from __future__ import annotations

import pytest
from threadpoolctl import threadpool_info

import privamp as pa
from privamp.numerics import threads
from privamp.pld import grid


def _blas() -> list[int]:
    return [d["num_threads"] for d in threadpool_info() if d["user_api"] == "blas"]


@pytest.fixture(autouse=True)
def _reset():
    threads.reset_blas_threads()
    yield
    threads.reset_blas_threads()


def test_single_threaded_inside_queries_restored_after(monkeypatch):
    before = _blas()
    seen: list[list[int]] = []
    orig = grid.convolve_nonneg

    def spy(*a, **k):
        seen.append(_blas())
        return orig(*a, **k)

    monkeypatch.setattr(grid, "convolve_nonneg", spy)
    threads.set_blas_threads(1)
    pa.Training(pa.Gaussian(1.0), pa.Poisson(0.01), steps=20).epsilon(1e-5)
    assert seen and all(n == 1 for s in seen for n in s)
    assert _blas() == before


def test_switch_leaves_blas_alone(monkeypatch):
    seen: list[list[int]] = []
    orig = grid.convolve_nonneg

    def spy(*a, **k):
        seen.append(_blas())
        return orig(*a, **k)

    monkeypatch.setattr(grid, "convolve_nonneg", spy)
    threads.set_blas_threads(None)
    before = _blas()
    pa.Training(pa.Gaussian(1.0), pa.Poisson(0.01), steps=20).epsilon(1e-5)
    assert seen and all(s == before for s in seen)
    assert threads.blas_threads() is None


def test_env_var(monkeypatch):
    threads.reset_blas_threads()
    monkeypatch.setenv(threads.ENV_VAR, "default")
    assert threads.blas_threads() is None
    threads.reset_blas_threads()
    monkeypatch.setenv(threads.ENV_VAR, "3")
    assert threads.blas_threads() == 3
    threads.reset_blas_threads()
    monkeypatch.setenv(threads.ENV_VAR, "zero")
    with pytest.raises(ValueError, match="PRIVAMP_BLAS_THREADS"):
        threads.blas_threads()


@pytest.mark.parametrize("bad", [0, -1, 1.5, True, "2"])
def test_bad_counts_refused(bad):
    with pytest.raises(ValueError, match="positive integer"):
        threads.set_blas_threads(bad)


def test_nested_limits_once():
    threads.set_blas_threads(1)
    with threads.limited_blas():
        with threads.limited_blas():
            assert all(n == 1 for n in _blas())
        assert all(n == 1 for n in _blas())
