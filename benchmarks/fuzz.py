"""Fuzz privamp's bounds against exact references (issue 17): random configurations across
mechanism x scheme x relation x steps x (epsilon | delta), each privamp query in a worker
process under a 30 s alarm (the worker is killed and replaced at 40 s) with its time and peak
RSS recorded; writes benchmarks/results/fuzz.md.

    .venv/bin/python benchmarks/fuzz.py --n 10000 --seed 0 [--workers 2]

References live in tests/soundness/exact_refs.py (independent of privamp).  A failure is an
under-report (upper below the exact value beyond 1e-9 relative + 1e-15 absolute, in delta
terms: for an epsilon query, the exact delta at the returned epsilon) or a lower bound above it.
"""

from __future__ import annotations

import argparse
import math
import multiprocessing as mproc
import os
import resource
import signal
import sys
import time
import traceback
import warnings
from collections import Counter, defaultdict
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")  # two workers share two cores
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "soundness"))
sys.path.insert(0, str(ROOT / "benchmarks"))

import fuzz_entries as E  # noqa: E402
import fuzz_extremes as X  # noqa: E402

FAMILIES = {**X.FAMILIES, **E.FAMILIES}

TIMEOUT = 30.0
RSS_LIMIT_MB = 1024.0
AS_CAP = 4 << 30  # hard address-space cap of a worker (protects the shared machine)
REL, ABS = 1e-9, 1e-15

# family -> share of the configurations
SHARES = {
    "rr-poisson": 0.01,
    "gauss-deterministic": 0.14,
    "gauss-unsampled": 0.15,
    "laplace-unsampled": 0.01,
    "sgm-rdp-integer": 0.17,
    "sgm-rdp-fractional": 0.005,
    "tiny-n": 0.006,
    "balanced-k1": 0.0005,
    "shuffle": 0.1385,
    # issue 27's extremes (benchmarks/fuzz_extremes.py)
    "inputs": 0.12,
    "shift": 0.08,
    "steps": 0.03,
    "cli": 0.05,
    # entry points added since (benchmarks/fuzz_entries.py)
    "entries": 0.06,
    "cli-entries": 0.03,
}


def _logu(rng, lo, hi):
    return float(math.exp(rng.uniform(math.log(lo), math.log(hi))))


def make_config(family: str, rng: np.random.Generator) -> dict:
    if family in FAMILIES:
        return FAMILIES[family][0](rng)
    c: dict = {"family": family}
    ask = "delta" if rng.random() < 0.5 else "epsilon"
    c["ask"] = ask
    c["eps"] = float(rng.choice([0.0, rng.uniform(0, 1), rng.uniform(0, 5), _logu(rng, 1e-3, 20)]))
    c["delta"] = _logu(rng, 1e-12, 0.5)
    if family == "rr-poisson":
        c["theta"] = float(rng.choice([rng.uniform(0.501, 0.99), 1 - _logu(rng, 1e-4, 0.5)]))
        c["q"] = float(min(1.0, _logu(rng, 1e-4, 1.5)))
        c["T"] = int(round(_logu(rng, 1, 200)))
    elif family == "gauss-deterministic":
        c["sigma"] = _logu(rng, 0.2, 20)
        c["b"] = int(rng.integers(1, 20))
        c["nb"] = int(rng.integers(1, 100))
        c["epochs"] = int(round(_logu(rng, 1, 200)))
    elif family == "gauss-unsampled":
        c["sigma"] = _logu(rng, 0.1, 50)
        c["sens"] = float(rng.choice([0.5, 1.0, 2.0, _logu(rng, 0.1, 10)]))
        c["T"] = int(round(_logu(rng, 1, 1e4)))
    elif family == "laplace-unsampled":
        c["scale"] = _logu(rng, 0.1, 10)
    elif family == "sgm-rdp-integer":
        c["sigma"] = _logu(rng, 0.05, 20)
        c["q"] = float(min(1.0, _logu(rng, 1e-10, 1.2)))
        c["alpha"] = int(round(_logu(rng, 2, 256)))
    elif family == "sgm-rdp-fractional":
        c["sigma"] = _logu(rng, 0.05, 5)
        c["q"] = _logu(rng, 1e-10, 0.5)
        c["alpha"] = float(rng.choice([1 + _logu(rng, 1e-3, 1), rng.uniform(2, 12)]))
    elif family == "tiny-n":
        c["kind"] = str(rng.choice(["wor-sub", "wr-sub", "wr-ar", "wor-ar"], p=[.4, .3, .25, .05]))
        c["n"] = int(rng.integers(2, 5))
        c["b"] = int(rng.integers(1, min(2, c["n"]) + 1))
        c["T"] = int(rng.integers(1, 3))
        c["sigma"] = _logu(rng, 0.5, 4)
        c["ask"] = "delta"
        c["eps"] = float(rng.uniform(0, 2))
    elif family == "balanced-k1":
        c["T"] = int(rng.integers(2, 4))
        c["sigma"] = _logu(rng, 0.5, 4)
        c["ask"] = "delta"
        c["eps"] = float(rng.uniform(0, 3))
    elif family == "shuffle":
        c["sigma"] = _logu(rng, 0.3, 5)
        c["b"] = int(rng.integers(1, 5))
        c["T"] = int(round(_logu(rng, 1, 1000)))
        c["ask"] = "delta"
    return c


# ------------------------------------------------------------------------------------------
# worker side
# ------------------------------------------------------------------------------------------
def _run(c: dict) -> dict:
    import exact_refs as R

    import privamp as pa

    fam = c["family"]
    out: dict = {}
    if fam in FAMILIES:
        t0 = time.perf_counter()
        out = FAMILIES[fam][1](c)
        out["seconds"] = time.perf_counter() - t0
        return out

    def timed(f):
        t0 = time.perf_counter()
        v = f()
        out["seconds"] = time.perf_counter() - t0
        return v

    if fam.startswith("sgm-rdp"):
        value = timed(lambda: float(pa.rdp(pa.Gaussian(c["sigma"]), pa.Poisson(c["q"]),
                                           c["alpha"])))
        if fam == "sgm-rdp-integer":
            exact = R.sgm_rdp_integer_float(c["alpha"], c["sigma"], c["q"])
        else:
            exact = R.sgm_rdp_mp(c["alpha"], c["sigma"], c["q"], dps=18)
        out["checks"] = [("upper", value, exact, "rdp")]
        return out

    if fam == "rr-poisson":
        run = pa.Training(pa.RandomizedResponse(c["theta"]), pa.Poisson(c["q"]), steps=c["T"])

        def curve(e):
            return R.rr_poisson_delta(e, c["theta"], c["q"], c["T"])
    elif fam == "gauss-deterministic":
        run = pa.Training(pa.Gaussian(c["sigma"]), pa.Deterministic(c["b"], c["b"] * c["nb"]),
                          epochs=c["epochs"])
        mu = math.sqrt(c["epochs"]) / c["sigma"]

        def curve(e):
            return R.gaussian_delta(e, mu)
    elif fam == "gauss-unsampled":
        run = pa.Training(pa.Gaussian(c["sigma"], c["sens"]), pa.Poisson(1.0), steps=c["T"])
        mu = math.sqrt(c["T"]) * c["sens"] / c["sigma"]

        def curve(e):
            return R.gaussian_delta(e, mu)
    elif fam == "laplace-unsampled":
        run = pa.Training(pa.Laplace(c["scale"]), pa.Poisson(1.0), steps=1)

        def curve(e):
            return R.laplace_delta(e, 1.0 / c["scale"])
    elif fam == "tiny-n":
        b, n, T, s = c["b"], c["n"], c["T"], c["sigma"]
        kind = c["kind"]
        if kind == "wor-sub":
            q = b / n
            pairs = [R.mixture_remove([1 - q, q], [0.0, 1.0], s),
                     R.MixturePair([1 - q, q], [0.0, 0.5], [1 - q, q], [0.0, -0.5], s)]
            scheme, rel = pa.WithoutReplacement(b, n), pa.Substitution()
        elif kind == "wr-sub":
            pairs = [R.mixture_remove(R.binom_weights(b, 1 / n), list(map(float, range(b + 1))), s)]
            scheme, rel = pa.WithReplacement(b, n), pa.Substitution()
        elif kind == "wr-ar":
            pairs = [R.mixture_remove(R.binom_weights(b, 1 / (n + 1)),
                                      [2.0 * j for j in range(b + 1)], s)]
            scheme, rel = pa.WithReplacement(b, n), pa.AddRemove()
        else:
            q = b / (n + 1)
            pairs = [R.mixture_remove([1 - q, q], [0.0, 2.0], s)]
            scheme, rel = pa.WithoutReplacement(b, n), pa.AddRemove()
        run = pa.Training(pa.Gaussian(s), scheme, steps=T, relation=rel)
        g = timed(lambda: run.delta(c["eps"]))
        ref = max(p.curve(c["eps"], T) for p in pairs)
        # a realised pair: a lower bound on the truth, so only the upper bound is checked,
        # except without replacement / substitution where the pair is also dominating
        checks = [("upper", g.upper.value if g.upper else None, ref, "delta")]
        if kind == "wor-sub":
            checks.append(("lower", g.lower.value if g.lower else None, ref, "delta"))
        out["checks"] = checks
        out["empty"] = g.upper is None and g.lower is None
        return out
    elif fam == "balanced-k1":
        run = pa.Training(pa.Gaussian(c["sigma"]), pa.BalancedIteration(c["T"], 1), steps=c["T"])

        def curve(e):
            return R.balanced_k1_delta(e, c["sigma"], c["T"])
    elif fam == "shuffle":
        b, T, s = c["b"], c["T"], c["sigma"]
        run = pa.Training(pa.Gaussian(s), pa.Shuffle(b, b * T), epochs=1)
        g = timed(lambda: run.delta(c["eps"]))
        eq7 = R.chua_eq7_fast(c["eps"], s, T)
        det = R.gaussian_delta(c["eps"], 1.0 / s)
        out["checks"] = [("upper", g.upper.value if g.upper else None, eq7, "delta"),
                         ("lower", g.lower.value if g.lower else None, det, "delta")]
        out["empty"] = g.upper is None and g.lower is None
        return out
    else:
        raise ValueError(fam)

    if c["ask"] == "delta":
        g = timed(lambda: run.delta(c["eps"]))
        exact = curve(c["eps"])
        out["checks"] = [("upper", g.upper.value if g.upper else None, exact, "delta"),
                         ("lower", g.lower.value if g.lower else None, exact, "delta")]
    else:
        g = timed(lambda: run.epsilon(c["delta"]))
        d = c["delta"]
        checks = []
        if g.upper is not None:
            u = g.upper.value
            checks.append(("upper-eps", curve(u) if math.isfinite(u) else -math.inf, d, "eps"))
            out["upper_eps"] = u
        if g.lower is not None and g.lower.value > 0:
            checks.append(("lower-eps", curve(g.lower.value), d, "eps"))
        out["checks"] = checks
    out["empty"] = g.upper is None and g.lower is None
    return out


def _worker(conn) -> None:
    resource.setrlimit(resource.RLIMIT_AS, (AS_CAP, AS_CAP))

    def handler(signum, frame):
        raise TimeoutError(f"query exceeded {TIMEOUT:.0f} s")

    signal.signal(signal.SIGALRM, handler)
    import exact_refs  # noqa: F401  (warm imports outside the timed region)

    import privamp  # noqa: F401

    while True:
        c = conn.recv()
        if c is None:
            return
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        t0 = time.perf_counter()
        signal.setitimer(signal.ITIMER_REAL, TIMEOUT)
        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                res = _run(c)
            res["warnings"] = sorted({f"{w.category.__name__}: {w.message}"[:120]
                                      for w in caught})
            res["error"] = None
        except BaseException as exc:  # noqa: BLE001 - recorded by type in the report
            res = {"error": type(exc).__name__, "message": str(exc)[:300],
                   "where": traceback.format_exc(limit=-1)[-300:]}
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
        res["wall"] = time.perf_counter() - t0
        after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        res["rss_mb"] = after
        res["rss_grew"] = after > before + 1
        conn.send(res)


class Worker:
    def __init__(self, ctx):
        self.ctx = ctx
        self.start()

    def start(self):
        self.parent, child = self.ctx.Pipe()
        self.proc = self.ctx.Process(target=_worker, args=(child,), daemon=True)
        self.proc.start()
        self.task = None
        self.sent = 0.0

    def kill(self):
        self.proc.kill()
        self.proc.join()
        self.start()


# ------------------------------------------------------------------------------------------
# judging and report
# ------------------------------------------------------------------------------------------
def judge(c: dict, res: dict) -> list[dict]:
    """Failures of one configuration, each with its relative margin (negative = violated)."""
    fails = []
    margins = []
    for kind, value, ref, unit in res.get("checks", []):
        if value is None:
            continue
        tol = REL * abs(ref) + (ABS if unit != "rdp" else 0.0)
        if kind == "upper":
            margin, bad = value - ref, value < ref - tol
        elif kind == "lower":
            margin, bad = ref - value, value > ref + tol
        elif kind == "upper-eps":  # exact delta at the returned epsilon must be <= delta
            margin, bad = ref - value, value > ref + tol
        else:  # lower-eps: exact delta at the returned lower epsilon must be >= delta
            margin, bad = value - ref, value < ref - tol
        rel = margin / abs(ref) if ref else margin
        margins.append((rel, kind))
        if bad:
            fails.append({"check": kind, "value": value, "reference": ref, "rel_margin": rel})
    res["margins"] = margins
    return fails


def reproducer(c: dict) -> str:
    f = c["family"]
    if f in E.FAMILIES:
        return E.reproducer(c)
    if f in X.FAMILIES:
        return X.reproducer(c)
    if f.startswith("sgm-rdp"):
        return f"pa.rdp(pa.Gaussian({c['sigma']!r}), pa.Poisson({c['q']!r}), {c['alpha']!r})"
    q = f"delta({c['eps']!r})" if c["ask"] == "delta" else f"epsilon({c['delta']!r})"
    if f == "rr-poisson":
        r = f"pa.Training(pa.RandomizedResponse({c['theta']!r}), pa.Poisson({c['q']!r}), " \
            f"steps={c['T']})"
    elif f == "gauss-deterministic":
        r = f"pa.Training(pa.Gaussian({c['sigma']!r}), pa.Deterministic({c['b']}, " \
            f"{c['b'] * c['nb']}), epochs={c['epochs']})"
    elif f == "gauss-unsampled":
        r = f"pa.Training(pa.Gaussian({c['sigma']!r}, {c['sens']!r}), pa.Poisson(1.0), " \
            f"steps={c['T']})"
    elif f == "laplace-unsampled":
        r = f"pa.Training(pa.Laplace({c['scale']!r}), pa.Poisson(1.0), steps=1)"
    elif f == "tiny-n":
        sch = "WithoutReplacement" if c["kind"].startswith("wor") else "WithReplacement"
        rel = "Substitution" if c["kind"].endswith("sub") else "AddRemove"
        r = f"pa.Training(pa.Gaussian({c['sigma']!r}), pa.{sch}({c['b']}, {c['n']}), " \
            f"steps={c['T']}, relation=pa.{rel}())"
    elif f == "balanced-k1":
        r = f"pa.Training(pa.Gaussian({c['sigma']!r}), pa.BalancedIteration({c['T']}, 1), " \
            f"steps={c['T']})"
    else:
        r = f"pa.Training(pa.Gaussian({c['sigma']!r}), pa.Shuffle({c['b']}, " \
            f"{c['b'] * c['T']}), epochs=1)"
    return f"{r}.{q}"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=10_000, help="number of configurations")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "fuzz.md"))
    args = ap.parse_args(argv)

    rng = np.random.default_rng(args.seed)
    fams = list(SHARES)
    counts = {f: int(round(SHARES[f] * args.n)) for f in fams}
    counts[fams[0]] += args.n - sum(counts.values())
    configs = [make_config(f, rng) for f in fams for _ in range(counts[f])]
    order = rng.permutation(len(configs))
    configs = [configs[i] for i in order]

    ctx = mproc.get_context("fork")
    workers = [Worker(ctx) for _ in range(args.workers)]
    results: list[dict | None] = [None] * len(configs)
    pending = list(range(len(configs)))[::-1]
    t_start = time.time()
    done = 0
    reported = 0
    while done < len(configs):
        for w in workers:
            if w.task is None and pending:
                w.task = pending.pop()
                w.sent = time.time()
                w.parent.send(configs[w.task])
        for w in workers:
            if w.task is None:
                continue
            if w.parent.poll(0.005):
                try:
                    res = w.parent.recv()
                except EOFError:
                    res = {"error": "WorkerDied", "message": "worker process died",
                           "wall": time.time() - w.sent, "rss_mb": math.nan}
                    results[w.task] = res
                    w.task = None
                    done += 1
                    w.kill()
                    continue
                results[w.task] = res
                w.task = None
                done += 1
                if res.get("rss_mb", 0) > RSS_LIMIT_MB:
                    w.kill()  # fresh process so later queries get their own peak RSS
            elif time.time() - w.sent > TIMEOUT + 10 or not w.proc.is_alive():
                results[w.task] = {"error": "HardTimeout" if w.proc.is_alive() else "WorkerDied",
                                   "message": "killed", "wall": time.time() - w.sent,
                                   "rss_mb": math.nan}
                w.task = None
                done += 1
                w.kill()
        if done >= reported + 500:
            reported = done - done % 500
            print(f"{done}/{len(configs)} in {time.time() - t_start:.0f} s", flush=True)
            if reported % 2000 == 0:  # a partial report, in case the run is cut short
                idx = [i for i, r in enumerate(results) if r is not None]
                write_report(args, [configs[i] for i in idx], [results[i] for i in idx],
                             time.time() - t_start, quiet=True)
    for w in workers:
        w.parent.send(None)
    elapsed = time.time() - t_start
    write_report(args, configs, results, elapsed)
    return 0


def write_report(args, configs, results, elapsed, quiet: bool = False) -> None:
    per_fam = Counter()
    fails_by_fam = Counter()
    errors = Counter()
    errors_by_fam = defaultdict(Counter)
    failures = []
    slow, big, empty = [], [], []
    worst: dict[str, tuple[float, str]] = {}
    times = defaultdict(list)
    examples_err: dict[str, str] = {}
    leaked: dict[str, str] = {}
    outcomes: dict[str, Counter] = defaultdict(Counter)
    for c, r in zip(configs, results, strict=True):
        f = c["family"]
        per_fam[f] += 1
        for w in r.get("warnings", []):
            leaked.setdefault(w, reproducer(c))
        if r.get("outcome"):
            outcomes[f][r["outcome"]] += 1
        if r.get("error"):
            errors[r["error"]] += 1
            errors_by_fam[f][r["error"]] += 1
            examples_err.setdefault(f"{f}: {r['error']}",
                                    f"`{reproducer(c)}` -> {r.get('message', '')[:200]}")
        else:
            times[f].append(r.get("seconds", r["wall"]))
            if r.get("empty"):
                empty.append(c)
        if r.get("wall", 0) > TIMEOUT or r.get("error") in ("TimeoutError", "HardTimeout"):
            slow.append((c, r))
        if r.get("rss_mb", 0) > RSS_LIMIT_MB and r.get("rss_grew", True):
            big.append((c, r))
        if r.get("error"):
            continue
        fl = judge(c, r)
        for rel, kind in r["margins"]:
            key = f"{f} ({kind})"
            if key not in worst or rel < worst[key][0]:
                worst[key] = (rel, reproducer(c))
        if fl:
            fails_by_fam[f] += 1
            failures.append((c, fl))

    lines = [
        "# Fuzzing privamp against exact references",
        "",
        f"`benchmarks/fuzz.py --n {args.n} --seed {args.seed} --workers {args.workers}`"
        f"{' (partial)' if len(configs) < args.n else ''}: "
        f"{len(configs)} configurations in {elapsed:.0f} s; each privamp query in a worker "
        f"process under a {TIMEOUT:.0f} s alarm (killed at {TIMEOUT + 10:.0f} s) with a "
        f"{AS_CAP >> 30} GB address-space cap; peak RSS from getrusage (a worker that passes "
        f"{RSS_LIMIT_MB:.0f} MB is replaced).",
        "",
        "Failure = an upper bound below the exact value by more than 1e-9 relative + 1e-15, or a "
        "lower bound above it (for epsilon queries: the exact delta at the returned epsilon).",
        "References: tests/soundness/exact_refs.py.",
        "",
        "| family | configs | failures | errors | median s | max s |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for f in SHARES:
        ts = times[f]
        med = f"{np.median(ts):.3f}" if ts else "-"
        mx = f"{max(ts):.2f}" if ts else "-"
        lines.append(f"| {f} | {per_fam[f]} | {fails_by_fam[f]} | "
                     f"{sum(errors_by_fam[f].values())} | {med} | {mx} |")
    lines += ["", f"**Under-reports / lower bounds above the truth: {len(failures)}.** "
              f"Queries over {TIMEOUT:.0f} s: {len(slow)}. Over {RSS_LIMIT_MB:.0f} MB: {len(big)}. "
              f"Empty answers: {len(empty)}.", ""]
    n_warn = sum(1 for r in results if r.get("warnings"))
    n_tb = sum(k for e, k in errors.items() if e not in ("ValueError", "NotApplicable"))
    lines += [f"**Queries that leaked a warning: {n_warn}.** Errors other than ValueError / "
              f"NotApplicable (tracebacks a user would see): {n_tb}.", ""]
    if leaked:
        lines += ["## Leaked warnings (first reproducer each)", ""]
        lines += [f"- {w}: `{rep}`" for w, rep in list(leaked.items())[:20]] + [""]
    if outcomes:
        lines += ["## Outcomes of the extreme families", ""]
        for f, cnt in outcomes.items():
            lines.append(f"- {f}: " + ", ".join(f"{k} {v}" for k, v in cnt.most_common(8)))
        lines.append("")
    lines += ["## Errors by type", ""]
    if errors:
        for e, k in errors.most_common():
            where = ", ".join(f"{f} {errs[e]}" for f, errs in errors_by_fam.items() if e in errs)
            lines.append(f"- {e}: {k} ({where})")
        lines += ["", "First example of each:", ""]
        for k, v in examples_err.items():
            lines.append(f"- {k}: {v}")
    else:
        lines.append("none")
    lines += ["", "## Worst margin per family and check (relative; negative = violated)", ""]
    for key in sorted(worst):
        rel, rep = worst[key]
        lines.append(f"- {key}: {rel:.3e} — `{rep}`")
    lines += ["", "## Failures (first 40)", ""]
    if not failures:
        lines.append("none")
    for c, fl in failures[:40]:
        for x in fl:
            lines.append(f"- `{reproducer(c)}`: {x['check']} value {x['value']!r}, reference "
                         f"{x['reference']!r} (relative margin {x['rel_margin']:.3e})")
    lines += ["", f"## Queries over {TIMEOUT:.0f} s or {RSS_LIMIT_MB:.0f} MB (first 30)", ""]
    if not slow and not big:
        lines.append("none")
    for c, r in (slow + big)[:30]:
        lines.append(f"- `{reproducer(c)}`: {r.get('wall', math.nan):.1f} s, "
                     f"{r.get('rss_mb', math.nan):.0f} MB, {r.get('error') or 'ok'}")
    if empty:
        lines += ["", "## Empty answers (first 10)", ""]
        lines += [f"- `{reproducer(c)}`" for c in empty[:10]]
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text("\n".join(lines) + "\n")
    if not quiet:
        print("\n".join(lines[:20 + len(SHARES)]))
        print(f"report: {args.out}")


if __name__ == "__main__":
    sys.exit(main())
