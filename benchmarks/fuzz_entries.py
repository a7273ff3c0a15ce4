"""The entry-point families of benchmarks/fuzz.py added after issue 27's first runs: the sweep
and planning API on tiny grids, ``compare``, the trade-off functions, the newer schemes
(Shuffle of any (n, b), TruncatedPoisson, BallsInBins, PersistentBallsInBins), Poisson at
tiny deltas (the sum-test lower bound, against the exact one-step profile in mpmath) and the
CLI subcommands sweep / plan / tradeoff.

Same protocol as fuzz_extremes.py: ``make_<family>(rng) -> dict`` and ``run_<family>(c) ->
dict`` with ``checks`` (fuzz.py's judge) and ``outcome``.  Where no exact reference exists
the contract is "answer or refuse": an answer without NaN whose lower side is at most its
upper side, or ValueError / NotApplicable (anything else is recorded as an error).
"""

from __future__ import annotations

import contextlib
import io
import math

import numpy as np

KINDS = ("sweep", "calibration_table", "compare", "tradeoff", "tpr", "gdp", "scheme",
         "tiny-delta")
SCHEMES = ("shuffle", "truncated", "bins", "bins-persistent")


def _logu(rng, lo, hi):
    return float(math.exp(rng.uniform(math.log(lo), math.log(hi))))


def make_entries(rng) -> dict:
    kind = str(rng.choice(KINDS))
    c = {"family": "entries", "kind": kind, "ask": "-",
         "sigma": _logu(rng, 0.3, 20), "q": _logu(rng, 1e-4, 0.5),
         "T": int(round(_logu(rng, 1, 300))), "delta": _logu(rng, 1e-12, 0.1),
         "eps": float(rng.choice([0.0, rng.uniform(0, 3), _logu(rng, 1e-3, 50)])),
         "scheme": str(rng.choice(SCHEMES)), "n": int(round(_logu(rng, 2, 5000)))}
    c["b"] = int(rng.integers(1, c["n"] + 1)) if rng.random() < 0.3 else \
        int(max(1, round(c["n"] * _logu(rng, 1e-3, 1))))
    c["drop_last"], c["persistent"] = bool(rng.random() < 0.3), bool(rng.random() < 0.2)
    c["batches"] = int(round(_logu(rng, 1, 300)))
    c["alphas"] = sorted(float(a) for a in rng.uniform(0, 1, int(rng.integers(1, 6))))
    if kind == "tiny-delta":
        c["delta"] = _logu(rng, 1e-300, 1e-11)
        c["T"] = 1
        c["sigma"] = _logu(rng, 0.3, 5)
    return c


def _scheme(c):
    import privamp as pa

    if c["scheme"] == "shuffle":
        return pa.Shuffle(c["b"], c["n"], drop_last=c["drop_last"], persistent=c["persistent"])
    if c["scheme"] == "truncated":
        return pa.TruncatedPoisson(c["q"], c["b"], c["n"])
    if c["scheme"] == "bins":
        return pa.BallsInBins(c["batches"])
    return pa.PersistentBallsInBins(c["batches"])


def _check_guarantee(g) -> None:
    """No NaN; lower <= upper where both exist."""
    up = None if g.upper is None else np.asarray(g.upper.value, dtype=float)
    lo = None if g.lower is None else np.asarray(g.lower.value, dtype=float)
    for side in (up, lo):
        if side is not None and np.isnan(side).any():
            raise AssertionError("NaN in an answer")
    if up is not None and lo is not None and np.any(lo > up * (1 + 1e-9) + 1e-15):
        raise AssertionError(f"lower {lo} above upper {up}")


def _delta1_remove(eps: float, q: float, s: float) -> float:
    """The exact remove profile of one Poisson-subsampled Gaussian step (mpmath, 40 digits):
    P = (1 - q) N(0, 1) + q N(s, 1) vs Q = N(0, 1), a lower bound on the step's profile."""
    import mpmath as mp

    with mp.workdps(40):
        e, q, s = mp.mpf(eps), mp.mpf(q), mp.mpf(s)
        if mp.e ** e <= 1 - q:
            return float(1 - mp.e ** e)
        y = (mp.log((mp.e ** e - (1 - q)) / q) + s * s / 2) / s
        return float((1 - q) * mp.ncdf(-y) + q * mp.ncdf(s - y) - mp.e ** e * mp.ncdf(-y))


def _grid(c) -> dict:
    return {"sigma": [c["sigma"]], "sampler": ["poisson"], "rate": [c["q"]],
            "steps": [c["T"]], "delta": [max(c["delta"], 1e-10)]}


def run_entries(c: dict) -> dict:
    import privamp as pa

    kind, checks = c["kind"], []
    run = pa.Training(pa.Gaussian(c["sigma"]), pa.Poisson(c["q"]), steps=c["T"])
    try:
        if kind == "sweep":
            res = pa.sweep(store=None, progress=False, workers=1, **_grid(c))
            for row in res.rows:
                if row["status"] == "answered" and row["epsilon_lower"] is not None and \
                        row["epsilon_lower"] > row["epsilon_upper"]:
                    raise AssertionError(f"sweep row lower above upper: {row}")
        elif kind == "calibration_table":
            grid = _grid(c)
            del grid["sigma"]
            res = pa.calibration_table(epsilon=max(c["eps"], 0.1), store=None,
                                       progress=False, workers=1, **grid)
            for row in res.rows:
                if any(isinstance(v, float) and math.isnan(v) for v in row.values()):
                    raise AssertionError(f"NaN in a calibration row: {row}")
        elif kind == "compare":
            cmp = pa.compare(run, [pa.Poisson(c["q"]), _scheme(c)], delta=c["delta"])
            for _, g, _ in cmp.rows:
                if g is not None:
                    _check_guarantee(g)
        elif kind == "tradeoff":
            t = run.tradeoff(c["alphas"])
            lo, up = np.asarray(t.lower, dtype=float), np.asarray(t.upper, dtype=float)
            if np.isnan(lo).any() or np.isnan(up).any() or np.any(lo > up + 1e-12):
                raise AssertionError(f"trade-off lower {lo} above upper {up} (or NaN)")
        elif kind == "tpr":
            _check_guarantee(run.tpr_at_fpr(c["alphas"]))
        elif kind == "gdp":
            g = run.gdp_mu()
            if any(isinstance(v, float) and math.isnan(v) for v in vars(g).values()):
                raise AssertionError(f"NaN in {g}")
        elif kind == "scheme":
            srun = pa.Training(pa.Gaussian(c["sigma"]), _scheme(c), steps=c["T"])
            _check_guarantee(srun.epsilon(c["delta"]))
            _check_guarantee(srun.delta(c["eps"]))
        else:  # tiny-delta: one step, exact remove profile in mpmath
            g = run.epsilon(c["delta"])
            _check_guarantee(g)
            if g.lower is not None and g.lower.value > 0:
                ref = _delta1_remove(float(g.lower.value), c["q"], 1.0 / c["sigma"])
                checks.append(("lower-eps", ref, c["delta"], "eps"))
    except (ValueError, pa.NotApplicable) as exc:
        return {"checks": [], "outcome": f"refused: {type(exc).__name__}", "message": str(exc)}
    return {"checks": checks, "outcome": "answered"}


_CLI = {
    "sweep": ["--sigma", "--sampler", "--rate", "--steps", "--delta", "--epsilon", "--task",
              "--plot"],
    "plan": ["--knob", "--sampler", "--rate", "--steps", "--delta", "--epsilon", "--plot"],
    "tradeoff": ["--sigma", "--scheme", "--rate", "--steps", "--batch-size",
                 "--dataset-size", "--plot", "--mechanism"],
}
_VALUES = {
    "--sigma": ["1.0", "0.5", "1e300", "-1", "nan", "x"],
    "--sampler": ["poisson", "shuffle", "nonsense"], "--scheme": ["poisson", "shuffle", "bins"],
    "--rate": ["0.01", "1e-9", "1.5", "0"], "--steps": ["10", "1", "0", "1e20", "3.5"],
    "--delta": ["1e-5", "1e-300", "0", "2"], "--epsilon": ["1.0", "0", "-1", "1e6"],
    "--task": ["epsilon", "delta"], "--knob": ["noise", "rate", "steps", "epochs"],
    "--batch-size": ["10", "0", "1000"], "--dataset-size": ["100", "1000", "5"],
    "--plot": ["/nonexistent/dir/x.png"], "--mechanism": ["gaussian", "laplace", "rr"],
}


def make_cli_entries(rng) -> dict:
    cmd = str(rng.choice(list(_CLI)))
    argv = [cmd]
    for flag in _CLI[cmd]:
        if rng.random() < 0.5:
            argv += [flag, str(rng.choice(_VALUES[flag]))]
    if cmd in ("sweep", "plan"):
        argv.append("--no-store")
    return {"family": "cli-entries", "argv": argv, "ask": "-"}


def run_cli_entries(c: dict) -> dict:
    """``privamp.cli.main(argv)``: 0 or 2 with no traceback (as fuzz_extremes.run_cli)."""
    from privamp.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(c["argv"])
        except SystemExit as stop:
            code = int(stop.code or 0)
    text = err.getvalue()
    if "Traceback" in text or code not in (0, 2):
        raise AssertionError(f"exit {code}: {text.strip()[-200:]}")
    return {"checks": [], "outcome": f"exit {code}", "stderr": text[-200:]}


FAMILIES = {"entries": (make_entries, run_entries),
            "cli-entries": (make_cli_entries, run_cli_entries)}


def reproducer(c: dict) -> str:
    if c["family"] == "cli-entries":
        return "privamp " + " ".join(c["argv"])
    keys = ("kind", "sigma", "q", "T", "delta", "eps", "scheme", "n", "b", "drop_last",
            "persistent", "batches", "alphas")
    return "fuzz_entries " + ", ".join(f"{k}={c[k]!r}" for k in keys)
