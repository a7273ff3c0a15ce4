"""The FFT floor of a Poisson PLD query: the transforms its composition needs, alone.

Runs the default call ``Training(Gaussian(sigma), Poisson(q), steps=T).epsilon(delta)``
once with pocketfft's real transforms recorded (length, dtype, input), then replays exactly
those transforms on the same inputs, alone, and compares CPU times (``time.process_time``,
interleaved, best of ``--repeat``): the floor, the whole query, and their ratio.

    python benchmarks/floor.py [--q 0.0042667] [--sigma 1.1] [--steps 14063] [--repeat 15]
                               [--phases] [--detail]

``--phases`` also times the query's phases (grid plan, discretisations, two-level
compositions, the rest), each the least over the repeats; ``--detail`` finer, overlapping
costs (Chernoff windows, long-double spectra, coarsening, discretisation parts, the epsilon
inversion, the RDP screening).
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np
from scipy.fft._pocketfft import pypocketfft as _pfft  # (the transforms' one entry point)


def record(q: float, sigma: float, steps: int, delta: float) -> list[tuple]:
    """(kind, input, n, args) of every real transform one query makes, recorded at
    pocketfft's r2c / c2r (behind scipy.fft.rfft / irfft and privamp's in-place transforms,
    ``numerics/fft_plans.py``); ``n`` is the transform length."""
    import privamp as pa

    calls: list[tuple] = []
    r2c, c2r = _pfft.r2c, _pfft.c2r

    def r(x, axes, forward, inorm, out=None, nthreads=1):
        calls.append(("r", np.array(x, copy=True), x.shape[-1], (axes, forward, inorm)))
        return r2c(x, axes, forward, inorm, out, nthreads)

    def i(x, axes, lastsize, forward, inorm, out=None, nthreads=1):
        calls.append(("i", np.array(x, copy=True), lastsize, (axes, lastsize, forward, inorm)))
        return c2r(x, axes, lastsize, forward, inorm, out, nthreads)

    _pfft.r2c, _pfft.c2r = r, i
    try:
        pa.Training(pa.Gaussian(sigma), pa.Poisson(q), steps=steps).epsilon(delta)
    finally:
        _pfft.r2c, _pfft.c2r = r2c, c2r
    return calls


def replay(calls: list[tuple]) -> float:
    """CPU seconds of the recorded transforms alone (each into a fresh output array)."""
    t0 = time.process_time()
    for kind, x, _, args in calls:
        (_pfft.r2c if kind == "r" else _pfft.c2r)(x, *args, None, 1)
    return time.process_time() - t0


def query(q: float, sigma: float, steps: int, delta: float) -> float:
    """CPU seconds of one fresh query (nothing cached between queries)."""
    import privamp as pa

    t0 = time.process_time()
    pa.Training(pa.Gaussian(sigma), pa.Poisson(q), steps=steps).epsilon(delta)
    return time.process_time() - t0


#: the query's phases timed by ``--phases`` (functions of privamp.accountants.poisson)
PHASES = ("grid_plan", "discretise", "compose_two_level")

#: the finer costs timed by ``--detail``: (label, module, attribute) wrapped where they are
#: called (a name imported into a module is looked up there), each call timed once however
#: deeply it recurses; parts of the phases above, so they overlap them and each other
DETAIL = (
    ("power: Chernoff windows", "privamp.numerics.fft", "chernoff_k"),
    ("power: blocked masses", "privamp.numerics.fft", "blocked_log_masses_both"),
    ("power: long-double spectra", "privamp.numerics.fft", "_long_double_spectrum"),
    ("power: inverse FFT", "privamp.numerics.fft", "inverse_then_release"),
    ("power: all", "privamp.pld.grid", "self_convolve_power"),
    ("compose (squaring, remainders)", "privamp.pld.grid", "PLD.compose"),
    ("coarsen", "privamp.pld.grid", "PLD.coarsen"),
    ("discretise: base tails (ndtr)", "privamp.pairs.combinators", "MixturePair._fresh_tails"),
    ("discretise: float-error bounds", "privamp.pld.discretise", "split_tail_errors"),
    ("discretise: allowance tables", "privamp.pld.discretise", "with_float_allowance"),
    ("query: epsilon inversion", "privamp.pld.grid", "PLD.epsilon"),
    ("screening: RDP ruled out", "privamp.accounting.training", "rdp_ruled_out"),
)


def _best_times(wrapped: list[tuple[str, object, str]], q: float, sigma: float, steps: int,
                delta: float, repeat: int) -> dict[str, float]:
    """Per label, the least CPU seconds over ``repeat`` fresh queries of the calls to each
    ``(label, owner, attribute)`` (summed within a query; a call inside another call of the
    same label is not counted twice), and of the whole query and the rest."""
    import privamp as pa

    spent: dict[str, float] = {}
    saved = [(owner, attr, getattr(owner, attr)) for _, owner, attr in wrapped]

    def timed(name, f):
        depth = [0]

        def g(*a, **k):
            if depth[0]:
                return f(*a, **k)
            depth[0] += 1
            t0 = time.process_time()
            try:
                return f(*a, **k)
            finally:
                depth[0] -= 1
                spent[name] = spent.get(name, 0.0) + time.process_time() - t0
        return g

    best: dict[str, float] = {}
    try:
        for (name, _, _), (owner, attr, f) in zip(wrapped, saved, strict=True):
            setattr(owner, attr, timed(name, f))
        for _ in range(repeat):
            spent.clear()
            t0 = time.process_time()
            pa.Training(pa.Gaussian(sigma), pa.Poisson(q), steps=steps).epsilon(delta)
            row = dict(spent, query=time.process_time() - t0)
            row["rest"] = row["query"] - sum(spent.values())
            for k, v in row.items():
                best[k] = min(best.get(k, math.inf), v)
    finally:
        for owner, attr, f in saved:
            setattr(owner, attr, f)
    return best


def phases(q: float, sigma: float, steps: int, delta: float, repeat: int) -> dict[str, float]:
    """Per phase, the least CPU seconds over ``repeat`` fresh queries of the calls to each
    function of :data:`PHASES` (summed within a query), and of the whole query."""
    from privamp.accountants import poisson

    return _best_times([(name, poisson, name) for name in PHASES], q, sigma, steps, delta,
                       repeat)


def detail(q: float, sigma: float, steps: int, delta: float, repeat: int) -> dict[str, float]:
    """As :func:`phases` for the finer costs of :data:`DETAIL` (overlapping; ``rest`` is then
    not meaningful and is dropped)."""
    import importlib

    wrapped = []
    for label, mod, path in DETAIL:
        owner = importlib.import_module(mod)
        *outer, attr = path.split(".")
        for part in outer:
            owner = getattr(owner, part)
        wrapped.append((label, owner, attr))
    best = _best_times(wrapped, q, sigma, steps, delta, repeat)
    best.pop("rest", None)
    return best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--q", type=float, default=256 / 60000)
    ap.add_argument("--sigma", type=float, default=1.1)
    ap.add_argument("--steps", type=int, default=14063)
    ap.add_argument("--delta", type=float, default=1e-5)
    ap.add_argument("--repeat", type=int, default=15)
    ap.add_argument("--phases", action="store_true",
                    help="also print the least CPU time of each phase over --repeat queries")
    ap.add_argument("--detail", action="store_true",
                    help="also print the least CPU time of finer (overlapping) costs")
    a = ap.parse_args()
    query(a.q, a.sigma, a.steps, a.delta)  # warm up (imports, scipy plans)
    calls = record(a.q, a.sigma, a.steps, a.delta)
    floor = whole = float("inf")
    for _ in range(a.repeat):  # interleaved: both see the same machine load
        floor = min(floor, replay(calls))
        whole = min(whole, query(a.q, a.sigma, a.steps, a.delta))
    n_ld = sum(1 for _, x, _, _ in calls if x.dtype in (np.longdouble, np.clongdouble))
    print(f"q={a.q:g} sigma={a.sigma:g} T={a.steps} delta={a.delta:g}")
    print(f"transforms: {len(calls)} ({n_ld} long double), longest "
          f"{max(n for _, _, n, _ in calls)}")
    print(f"FFT floor {floor * 1e3:.2f} ms CPU, query {whole * 1e3:.2f} ms CPU, "
          f"ratio {whole / floor:.2f}")
    if a.phases:
        best = phases(a.q, a.sigma, a.steps, a.delta, a.repeat)
        print("phases (least ms CPU over the repeats; rest = query - phases): " + ", ".join(
            f"{k} {v * 1e3:.2f}" for k, v in best.items()))
    if a.detail:
        best = detail(a.q, a.sigma, a.steps, a.delta, a.repeat)
        print("detail (least ms CPU over the repeats; overlapping):")
        for k, v in best.items():
            print(f"  {k:34s} {v * 1e3:7.2f}")


if __name__ == "__main__":
    main()
