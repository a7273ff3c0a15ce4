"""The extreme families of benchmarks/fuzz.py (issue 27): odd inputs to every public entry
point, tiny and huge noise shifts, step counts up to the largest int64, and the CLI.

Each family has ``make_<family>(rng) -> dict`` (the configuration) and ``run_<family>(c) ->
dict`` (run in the fuzz worker: ``checks`` as in fuzz.py, plus ``outcome``), and a one-line
reproducer.  References: mpmath (the Gaussian profile at any shift), the union bound on total
variation (tiny shifts), and the contract "an answer of the input's shape, or ValueError /
NotApplicable" (inputs, CLI).
"""

from __future__ import annotations

import contextlib
import io
import math
from fractions import Fraction

import numpy as np

INT64_MAX = 2**63 - 1

#: odd values given to delta / epsilon arguments, by name
ODD_INPUTS = {
    "None": None, "str": "1e-5", "bool": True, "complex": 1e-5 + 0j, "nan": float("nan"),
    "inf": float("inf"), "neg": -1e-5, "zero": 0.0, "one": 1.0, "empty": [],
    "nested": [[1e-5, 1e-3], [0.1, 0.5]], "ragged": [[1e-5], [1e-3, 0.1]],
    "np.float32": np.float32(1e-5), "np.float16": np.float16(0.001), "np.int64": np.int64(0),
    "np.bool_": np.bool_(False), "0d": np.array(1e-3), "2d": np.array([[1e-5, 1e-3], [0.1, 0.5]]),
    "3d": np.full((2, 1, 2), 1e-4), "list": [1e-6, 1e-4], "tuple": (1e-6, 0.2),
    "fraction": Fraction(1, 1000), "object": object(), "dict": {"delta": 1e-5},
    "bigint": 10**400, "tiny": 5e-324, "huge": 1e308, "str-list": ["1e-5"],
    "bool-array": np.array([True, False]), "mixed": [1e-5, None],
}

ENTRY_POINTS = ("Training.epsilon", "Training.delta", "Training.epsilon_curve",
                "Gaussian.epsilon", "Gaussian.delta", "Laplace.epsilon", "Laplace.delta",
                "RandomizedResponse.epsilon", "RandomizedResponse.delta", "Gaussian.rdp",
                "rdp")


def _logu(rng, lo, hi):
    return float(math.exp(rng.uniform(math.log(lo), math.log(hi))))


# -- inputs -----------------------------------------------------------------------------------
def make_inputs(rng) -> dict:
    return {"family": "inputs", "entry": str(rng.choice(ENTRY_POINTS)),
            "input": str(rng.choice(list(ODD_INPUTS))), "ask": "-"}


def _call_entry(entry: str, value):
    import privamp as pa

    run = pa.Training(pa.Gaussian(1.0), pa.Poisson(0.01), steps=20)
    mechs = {"Gaussian": pa.Gaussian(1.0), "Laplace": pa.Laplace(1.0),
             "RandomizedResponse": pa.RandomizedResponse(0.8)}
    if entry == "Training.epsilon":
        return run.epsilon(value)
    if entry == "Training.delta":
        return run.delta(value)
    if entry == "Training.epsilon_curve":
        return run.epsilon_curve(value, steps=[5, 20])
    if entry == "rdp":
        return pa.rdp(pa.Gaussian(1.0), pa.Poisson(0.01), value)
    name, method = entry.split(".")
    return getattr(mechs[name], method)(value)


def run_inputs(c: dict) -> dict:
    """An answer whose shape is the input's, or ValueError / NotApplicable (anything else is
    recorded as an error by the worker)."""
    import privamp as pa

    value = ODD_INPUTS[c["input"]]
    try:
        out = _call_entry(c["entry"], value)
    except (ValueError, pa.NotApplicable) as exc:
        return {"checks": [], "outcome": f"refused: {type(exc).__name__}", "message": str(exc)}
    shape = np.shape(value) if c["entry"] != "Training.epsilon_curve" else (2,)
    got = np.shape(np.asarray(out.upper.value if hasattr(out, "upper") else out.value))
    if got != shape:
        raise AssertionError(f"answer of shape {got} for an input of shape {shape}")
    if isinstance(value, str):
        raise AssertionError("a string was accepted")
    return {"checks": [], "outcome": "answered"}


# -- tiny / huge shifts -------------------------------------------------------------------------
def make_shift(rng) -> dict:
    s = _logu(rng, 1e-300, 30.0) if rng.random() < 0.7 else _logu(rng, 1e-300, 1e-3)
    sens = _logu(rng, 1e-100, 1e100)
    c = {"family": "shift", "s": s, "sigma": sens / s, "sens": sens,
         "q": float(rng.choice([1.0, _logu(rng, 1e-4, 0.5)])), "T": int(rng.integers(1, 30)),
         "eps": float(rng.choice([0.0, s, s * s, 10 * s, rng.uniform(0, 3)])),
         "delta": _logu(rng, 1e-12, 0.5),
         "ask": str(rng.choice(["profile", "delta", "epsilon"], p=[0.7, 0.15, 0.15]))}
    if c["sigma"] > 1e308 or c["sigma"] < 1e-308:
        c["sens"], c["sigma"] = 1.0, 1.0 / s
    c["T"] = min(c["T"], 5)  # keep the runs cheap
    if c["q"] < 1.0 and c["s"] < 1e-4:  # the PLD of a tiny shift takes seconds
        c["T"] = 1
    return c


def gaussian_profile_mp(s: float, eps: float) -> float:
    """Phi(s/2 - eps/s) - e^eps Phi(-s/2 - eps/s) in mpmath, precision enough for the
    cancellation at tiny s (Balle, Barthe, Gaboardi 2018, Thm 4)."""
    import mpmath as mp

    dps = 40 + int(max(0.0, -math.log10(s))) + 20
    with mp.workdps(dps):
        S, E = mp.mpf(s), mp.mpf(eps)
        if E / S > 60:  # Phi(-60) ~ 1e-784: below every double
            return 0.0
        return float(mp.ncdf(S / 2 - E / S) - mp.exp(E) * mp.ncdf(-S / 2 - E / S))


def run_shift(c: dict) -> dict:
    import privamp as pa

    mech = pa.Gaussian(c["sigma"], sensitivity=c["sens"])
    s = mech.shift(1)
    if c["ask"] == "profile":
        v = float(mech.delta(c["eps"]))
        ref = gaussian_profile_mp(s, c["eps"])
        # the profile is labelled exact: checked both ways
        return {"checks": [("upper", v, ref, "delta"), ("lower", v, ref, "delta")],
                "outcome": "answered"}
    run = pa.Training(mech, pa.Poisson(c["q"]), steps=c["T"])
    # union bound on total variation: delta(eps) <= delta(0) <= T q TV(N(s,1), N(0,1))
    tv_cap = min(1.0, c["T"] * c["q"] * math.erf(s / (2 * math.sqrt(2))) * (1 + 1e-12))
    if c["ask"] == "delta":
        g = run.delta(c["eps"])
        checks = [("lower", None if g.lower is None else float(g.lower.value), tv_cap,
                   "delta")]
        if c["q"] == 1.0:  # unsampled: exact Gaussian of shift sqrt(T) s
            ref = gaussian_profile_mp(math.sqrt(c["T"]) * s, c["eps"])
            checks += [("upper", None if g.upper is None else float(g.upper.value), ref,
                        "delta"),
                       ("lower", None if g.lower is None else float(g.lower.value), ref,
                        "delta")]
        return {"checks": checks, "outcome": "answered", "empty": g.upper is None}
    g = run.epsilon(c["delta"])
    checks = []
    if g.lower is not None and g.lower.value > 0:  # a positive lower epsilon needs TV > delta
        checks.append(("lower", c["delta"], tv_cap, "delta"))
    return {"checks": checks, "outcome": "answered", "empty": g.upper is None}


# -- huge step counts ---------------------------------------------------------------------------
def make_steps(rng) -> dict:
    T = int(min(INT64_MAX, round(_logu(rng, 1e6, 9.2e18))))
    if rng.random() < 0.1:
        T = INT64_MAX
    return {"family": "steps", "T": T, "sigma": _logu(rng, 0.3, 30.0),
            "q": _logu(rng, 1e-8, 0.5), "delta": _logu(rng, 1e-12, 0.1),
            "scheme": str(rng.choice(["poisson", "poisson", "deterministic"])),
            "ask": "epsilon"}


def run_steps(c: dict) -> dict:
    """An answer (or NotApplicable); the deterministic run's upper is checked against its
    closed form: T / (steps per epoch) unsampled releases, a Gaussian of shift
    sqrt(epochs) / sigma (checked in delta terms at the returned epsilon)."""
    import privamp as pa

    if c["scheme"] == "poisson":
        run = pa.Training(pa.Gaussian(c["sigma"]), pa.Poisson(c["q"]), steps=c["T"])
        g = run.epsilon(c["delta"])
        return {"checks": [], "outcome": "answered", "empty": g.upper is None}
    n = 100
    T = c["T"] - c["T"] % n or n
    run = pa.Training(pa.Gaussian(c["sigma"]), pa.Deterministic(1, n), steps=T)
    g = run.epsilon(c["delta"])
    checks = []
    if g.upper is not None and math.isfinite(g.upper.value):
        from scipy import stats

        mu = math.sqrt(T / n) / c["sigma"]
        e = float(g.upper.value)
        exact = stats.norm.cdf(mu / 2 - e / mu) - math.exp(min(e, 700)) * stats.norm.cdf(
            -mu / 2 - e / mu) if e < 700 else 0.0
        checks.append(("upper-eps", exact, c["delta"], "eps"))
    return {"checks": checks, "outcome": "answered", "empty": g.upper is None}


# -- the CLI ------------------------------------------------------------------------------------
_CLI_VALUES = {
    "--sigma": ["1.0", "0.5", "1e300", "1e-300", "0", "-1", "nan", "abc", "inf"],
    "--rate": ["0.01", "0.1", "1", "0", "1.5", "nan"],
    "--steps": ["1", "10", "100", "0", "-3", "1.5", "100000000000000000000", str(INT64_MAX)],
    "--epochs": ["1", "2.5", "0", "1e12", "inf"],
    "--delta": ["1e-5", "0.5", "0", "1", "nan", "x"],
    "--epsilon": ["1", "0", "-1", "inf", "1e6"],
    "--batch-size": ["10", "0", "7"],
    "--dataset-size": ["100", "5", "0"],
    "--theta": ["0.9", "1.0", "0.5", "2"],
    "--scale": ["1.0", "0", "1e-300"],
    "--points": ["3", "0", "500"],
    "--plot": ["/nonexistent/dir/x.png", "x.txt"],
}
_COMMANDS = ("epsilon", "delta", "curve", "rdp", "compare")


def make_cli(rng) -> dict:
    cmd = str(rng.choice(_COMMANDS))
    argv = [cmd]
    mech = str(rng.choice(["gaussian", "gaussian", "laplace", "rr"]))
    argv += ["--mechanism", mech]
    scheme = str(rng.choice(["poisson", "shuffle", "deterministic", "balanced", "nonsense"]))
    if cmd != "compare":
        argv += ["--scheme", scheme]
    flags = [f for f in _CLI_VALUES if rng.random() < 0.45]
    for must in {"epsilon": ["--delta"], "delta": ["--epsilon"], "curve": ["--delta"]}.get(
            cmd, []):
        if must not in flags and rng.random() < 0.9:
            flags.append(must)
    for f in flags:
        argv += [f, str(rng.choice(_CLI_VALUES[f]))]
    return {"family": "cli", "argv": argv, "ask": "-"}


def run_cli(c: dict) -> dict:
    """``privamp.cli.main(argv)`` must return 0 or 2 with at most one error line, never raise
    nor print a traceback; 3 (an internal error, one line) is recorded as such."""
    from privamp.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(c["argv"])
        except SystemExit as stop:  # argparse only: main catches it
            code = int(stop.code or 0)
    text = err.getvalue()
    if "Traceback" in text or code not in (0, 2):
        raise AssertionError(f"exit {code}: {text.strip()[-200:]}")
    return {"checks": [], "outcome": f"exit {code}", "stderr": text[-200:]}


FAMILIES = {"inputs": (make_inputs, run_inputs), "shift": (make_shift, run_shift),
            "steps": (make_steps, run_steps), "cli": (make_cli, run_cli)}


def reproducer(c: dict) -> str:
    f = c["family"]
    if f == "inputs":
        return f"{c['entry']}({c['input']})"
    if f == "shift":
        m = f"pa.Gaussian({c['sigma']!r}, sensitivity={c['sens']!r})"
        if c["ask"] == "profile":
            return f"{m}.delta({c['eps']!r})"
        q = f"delta({c['eps']!r})" if c["ask"] == "delta" else f"epsilon({c['delta']!r})"
        return f"pa.Training({m}, pa.Poisson({c['q']!r}), steps={c['T']}).{q}"
    if f == "steps":
        sch = f"pa.Poisson({c['q']!r})" if c["scheme"] == "poisson" else "pa.Deterministic(1, 100)"
        return f"pa.Training(pa.Gaussian({c['sigma']!r}), {sch}, steps={c['T']})" \
               f".epsilon({c['delta']!r})"
    return "privamp " + " ".join(c["argv"])
