"""The wide side-by-side scan of issue 28: privamp's default call against every peer's single
query, on >= 200 settings (Poisson-subsampled Gaussian at rates 1e-7..1e-2, sigma 0.3..8,
T 1e1..1e7; Laplace; randomized response; batches drawn without replacement under
substitution; groups), epsilon at delta = 1e-5.

Peers (each at its default or the setting benchmarks/run.py uses): dp-accounting's PLD
(value_discretization_interval 1e-4, connect-the-dots; for batches without replacement
``from_gaussian_mechanism`` at rate batch / n under REPLACE_ONE), Opacus's RDP and PRV
accountants, prv-accountant (eps_error 0.01,
delta_error 1e-9; T <= 1e3 only, Opacus's PRV T <= 1e4: they need minutes and gigabytes
beyond).  A peer without the
setting (dp-accounting has no subsampled randomized response, no groups; Opacus and
prv-accountant only Poisson-subsampled Gaussian) shows "-".  Groups are compared with
privamp's own single-record query (issue 28's target: a group of 8 <= 3x).

Every library runs single-threaded BLAS (threadpoolctl), as privamp does by default; the
ratios are of CPU times.  The machine may be shared: every setting runs each library once,
interleaved (privamp, then its peers, then the next setting), so the ratios within one row
are fair while the absolute times are noisy.  A call over ``--timeout`` CPU seconds is
stopped (SIGPROF) and reported as such.

privamp's cell shows its certified interval [lower, upper] (epsilon).  A peer's estimate
above privamp's upper bound is plain; one strictly between privamp's certified lower and
upper bounds is marked LOOSER (privamp's certified interval could be tightened towards it);
one below privamp's certified LOWER bound is marked PEER BELOW CERTIFIED LOWER: that peer
under-reports epsilon there (some pair of neighbouring datasets realises more), and privamp
cannot and must not match it.

    python benchmarks/scan.py [--quick] [--rows REGEX] [--repeats N] [--out FILE.md]

``--rows`` keeps the settings whose name (as printed) matches the regular expression
(``re.search``); without ``--rows`` the table goes to benchmarks/results/scan.md unless
``--out`` says otherwise, with it only to ``--out`` (if given).  ``--repeats`` runs each
setting's libraries that many times, interleaved, and reports the median CPU times.
"""

from __future__ import annotations

import argparse
import gc
import math
import re
import signal
import statistics
import sys
import time
import warnings
from collections.abc import Callable
from pathlib import Path

DELTA = 1e-5
PEERS = ["dp-accounting PLD", "Opacus RDP", "Opacus PRV", "prv-accountant"]


class _Timeout(Exception):
    pass


def _alarm(signum, frame):  # noqa: ARG001
    raise _Timeout


Value = float | tuple[float, float] | str


def timed(fn: Callable[[], float | tuple[float, float]], timeout: float
          ) -> tuple[Value, float, float]:
    """(epsilon, or (lower, upper) for privamp, or a short reason; wall seconds; CPU seconds
    of this process) of one call."""
    gc.collect()
    signal.signal(signal.SIGPROF, _alarm)
    signal.setitimer(signal.ITIMER_PROF, timeout)  # CPU time: wall time is load-dependent
    t0, c0 = time.perf_counter(), time.process_time()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out = fn()
            value: Value = (out if isinstance(out, tuple) else float(out))
    except _Timeout:
        value = f">{timeout:g} s cpu"
    except Exception as exc:  # noqa: BLE001  (a peer's refusal is a result of the scan)
        value = type(exc).__name__
    finally:
        signal.setitimer(signal.ITIMER_PROF, 0)
    return value, time.perf_counter() - t0, time.process_time() - c0


# -- the calls -----------------------------------------------------------------------------
def privamp_call(s: dict) -> Callable[[], tuple[float, float]]:
    """privamp's default call: (certified lower, upper) epsilon at DELTA."""
    import privamp as pa

    def run() -> tuple[float, float]:
        if s["kind"] == "laplace":
            mech = pa.Laplace(s["b"])
        elif s["kind"] == "rr":
            mech = pa.RandomizedResponse(s["theta"])
        else:
            mech = pa.Gaussian(s["sigma"])
        if s["kind"] == "wor":
            run_ = pa.Training(mech, pa.WithoutReplacement(s["batch"], s["n"]), steps=s["T"],
                               relation=pa.Substitution())
        else:
            run_ = pa.Training(mech, pa.Poisson(s["q"]), steps=s["T"],
                               relation=pa.AddRemove(group=s.get("group", 1)))
        g = run_.epsilon(DELTA)
        low = g.lower.value if g.lower is not None else 0.0
        return float(low), float(g.upper.value)

    return run


def peer_call(name: str, s: dict) -> Callable[[], float] | None:
    kind, T = s["kind"], s["T"]
    if name == "dp-accounting PLD":
        if kind in ("rr", "group"):
            return None
        import dp_accounting as dpa

        def dpa_run() -> float:
            if kind == "wor":  # (its PLDAccountant has no without-replacement event)
                from dp_accounting.pld import privacy_loss_distribution as pld

                d = pld.from_gaussian_mechanism(
                    s["sigma"], sampling_prob=s["batch"] / s["n"],
                    neighboring_relation=dpa.NeighboringRelation.REPLACE_ONE)
                return d.self_compose(T).get_epsilon_for_delta(DELTA)
            else:
                acc = dpa.pld.PLDAccountant()
                inner = (dpa.LaplaceDpEvent(s["b"]) if kind == "laplace"
                         else dpa.GaussianDpEvent(s["sigma"]))
                ev = dpa.PoissonSampledDpEvent(s["q"], inner)
            acc.compose(ev, T)
            return acc.get_epsilon(DELTA)

        return dpa_run
    if kind != "gauss":
        return None
    q, sigma = s["q"], s["sigma"]
    if name == "Opacus RDP":
        def opacus_rdp() -> float:
            from opacus.accountants import RDPAccountant

            acc = RDPAccountant()
            acc.history = [(sigma, q, T)]
            return acc.get_epsilon(DELTA)

        return opacus_rdp
    if T > 10**4 or (name == "prv-accountant" and T > 10**3):
        return None
    if name == "Opacus PRV":
        def opacus_prv() -> float:
            from opacus.accountants import PRVAccountant

            acc = PRVAccountant()
            acc.history = [(sigma, q, T)]
            return acc.get_epsilon(DELTA)

        return opacus_prv

    def prv_run() -> float:
        from prv_accountant import PRVAccountant
        from prv_accountant.privacy_random_variables import PoissonSubsampledGaussianMechanism

        rv = PoissonSubsampledGaussianMechanism(sampling_probability=q, noise_multiplier=sigma)
        acc = PRVAccountant(prvs=[rv], max_self_compositions=[T], eps_error=0.01,
                            delta_error=1e-9)
        return acc.compute_epsilon(delta=DELTA, num_self_compositions=[T])[2]

    return prv_run


# -- the settings --------------------------------------------------------------------------
def settings(quick: bool) -> list[dict]:
    out: list[dict] = []
    rates = [1e-7, 1e-6, 1e-5, 1e-4, 1e-3]
    sigmas = [0.3, 0.5, 1.0, 2.0, 4.0, 8.0]
    steps = [10, 100, 10**4, 10**6]
    for q in rates:
        for sigma in sigmas:
            for T in steps:
                out.append({"kind": "gauss", "q": q, "sigma": sigma, "T": T})
    for q in [1e-6, 1e-5, 1e-4]:
        for sigma in [0.5, 1.0, 2.0]:
            out.append({"kind": "gauss", "q": q, "sigma": sigma, "T": 10**7})
    for sigma in [0.8, 1.1, 2.0]:
        for T in [100, 14063]:
            out.append({"kind": "gauss", "q": 256 / 60000, "sigma": sigma, "T": T})
    for q in [1e-4, 1e-3, 1e-2]:
        for b in [0.5, 1.0, 2.0]:
            for T in [10, 100, 10**4]:
                out.append({"kind": "laplace", "q": q, "b": b, "T": T})
    for q in [1e-3, 1e-2, 0.1]:
        for theta in [0.6, 0.75, 0.9]:
            for T in [10, 100, 1000]:
                out.append({"kind": "rr", "q": q, "theta": theta, "T": T})
    for batch in [60, 256]:
        for sigma in [0.8, 1.5, 3.0]:
            for T in [100, 10**4]:
                out.append({"kind": "wor", "batch": batch, "n": 60000, "sigma": sigma, "T": T})
    for sigma in [1.0, 2.0]:
        for group in [2, 4, 8]:
            for T in [100, 10**4]:
                out.append({"kind": "group", "q": 1e-3, "sigma": sigma, "T": T, "group": group})
    return out[::17] if quick else out


def label(s: dict) -> str:
    T = f"T {s['T']:.0e}".replace("e+0", "e")
    if s["kind"] == "gauss":
        return f"Gaussian q {s['q']:.3g}, sigma {s['sigma']:g}, {T}"
    if s["kind"] == "laplace":
        return f"Laplace q {s['q']:.3g}, b {s['b']:g}, {T}"
    if s["kind"] == "rr":
        return f"RR q {s['q']:.3g}, theta {s['theta']:g}, {T}"
    if s["kind"] == "wor":
        return f"w/o repl. {s['batch']}/{s['n']}, subst., sigma {s['sigma']:g}, {T}"
    return f"group {s['group']}, Gaussian q {s['q']:.3g}, sigma {s['sigma']:g}, {T}"


def _fmt(v: Value) -> str:
    if isinstance(v, tuple):
        return f"[{v[0]:.7g}, {v[1]:.7g}]"
    return v if isinstance(v, str) else f"{v:.5g}"


BELOW = "PEER BELOW CERTIFIED LOWER"


def verdict(v: Value, pv: Value) -> str:
    """How a peer's estimate ``pv`` sits against privamp's certified interval ``v``:
    BELOW (``pv`` < the certified lower bound: the peer under-reports), "LOOSER" (``pv``
    strictly between lower and upper, beyond 1e-9 relative), or ""."""
    if not isinstance(v, tuple) or not isinstance(pv, float):
        return ""
    low, up = v
    if pv < low:
        return BELOW
    return "LOOSER" if up > pv * (1 + 1e-9) else ""


def run_setting(s: dict, repeats: int, timeout: float
                ) -> tuple[Value, float, float, dict[str, tuple[Value, float, float]]]:
    """privamp and every applicable peer on setting ``s``, ``repeats`` rounds interleaved
    (privamp, then each peer): (privamp's value, median wall, median CPU, per peer the same)."""
    calls = {"privamp": privamp_call(s)}
    for name in PEERS:
        fn = peer_call(name, s)
        if fn is not None:
            calls[name] = fn
    runs: dict[str, list[tuple[Value, float, float]]] = {k: [] for k in calls}
    for _ in range(repeats):
        for k, fn in calls.items():
            runs[k].append(timed(fn, timeout))
    med = {k: (r[0][0], statistics.median(x[1] for x in r), statistics.median(x[2] for x in r))
           for k, r in runs.items()}
    v, t, c = med.pop("privamp")
    return v, t, c, med


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="every 17th setting")
    ap.add_argument("--every", type=int, default=1, help="every n-th setting (a shared machine)")
    ap.add_argument("--rows", default=None,
                    help="regular expression: only settings whose name matches (re.search)")
    ap.add_argument("--repeats", type=int, default=1,
                    help="rounds per setting, interleaved; median CPU times")
    ap.add_argument("--timeout", type=float, default=20.0)
    ap.add_argument("--out", default=None,
                    help="markdown file to write (default: benchmarks/results/scan.md for a "
                         "full scan, none with --rows)")
    args = ap.parse_args()
    out = args.out if args.out is not None else (
        None if args.rows else "benchmarks/results/scan.md")
    from threadpoolctl import threadpool_limits

    import privamp as pa

    threadpool_limits(1, user_api="blas")  # every library single-threaded, as privamp's default
    pa.Training(pa.Gaussian(1.0), pa.Poisson(0.01), steps=10).epsilon(DELTA)  # warm up
    peer_call("Opacus RDP", {"kind": "gauss", "q": 0.01, "sigma": 1.0, "T": 10})()
    rows, losses, marks = [], [], []
    todo = settings(args.quick)[:: args.every]
    if args.rows:
        pattern = re.compile(args.rows)
        todo = [s for s in todo if pattern.search(label(s))]
    single: dict[tuple, float] = {}
    start = time.time()
    for n, s in enumerate(todo):
        v, t, c, peers = run_setting(s, args.repeats, args.timeout)
        cells = [f"{_fmt(v)} ({t:.3g} s, cpu {c:.3g} s)"]
        worst = math.inf
        for name in PEERS:
            if name not in peers:
                cells.append("-")
                continue
            pv, pt, pc = peers[name]
            ratio = pc / max(c, 1e-4)
            if isinstance(pv, float):  # (a refusal is no win)
                worst = min(worst, ratio)
            mark = verdict(v, pv)
            if mark:  # (full digits: the table rounds peers to 5 significant digits)
                assert isinstance(v, tuple) and isinstance(pv, float)
                marks.append((mark, name, f"{label(s)}: privamp [{v[0]!r}, {v[1]!r}], "
                                          f"{name} {pv!r} (upper - peer {v[1] - pv:.3g}, "
                                          f"{(v[1] - pv) / pv:.3g} relative)"))
            cells.append(f"{_fmt(pv)} ({pt:.3g} s, cpu {pc:.3g} s, {ratio:.2g}x)"
                         f"{' ' + mark if mark else ''}")
        if s["kind"] == "group":
            key = (s["q"], s["sigma"], s["T"])
            if key not in single:
                one = dict(s, kind="gauss", group=1)
                single[key] = timed(privamp_call(one), args.timeout)[2]
            cells.append(f"{c / max(single[key], 1e-4):.2g}x single")
        else:
            cells.append("")
        rows.append((label(s), cells, worst))
        if worst < 1.0:
            losses.append((worst, label(s)))
        print(f"[{n + 1}/{len(todo)} {time.time() - start:.0f}s] {label(s)}: " + " | ".join(cells),
              flush=True)
    flags = "".join(f" {f}" for f, on in [("--quick", args.quick),
                                           (f"--every {args.every}", args.every > 1),
                                           (f"--rows '{args.rows}'", bool(args.rows)),
                                           (f"--repeats {args.repeats}", args.repeats > 1)]
                    if on)
    lines = [
        "# Wide scan: privamp's default call against each peer's single query (issue 28)",
        "",
        f"Epsilon at delta = {DELTA:g}; `benchmarks/scan.py{flags}`, {len(todo)} settings, "
        f"python {sys.version.split()[0]}.  Each cell: epsilon (privamp: its certified "
        "interval [lower, upper]) "
        "(wall time, CPU time, and the ratio peer CPU time / privamp CPU time: above 1x "
        "privamp is faster; every library ran single-threaded BLAS, privamp by default, so "
        "CPU time is the load-independent measure).  LOOSER: the peer's estimate lies "
        "strictly between privamp's certified lower and upper bounds (dp-accounting's PLD "
        f"and PRV estimates are not all certified upper bounds).  {BELOW}: the peer's "
        "estimate is below privamp's certified lower bound, so the peer under-reports "
        "epsilon there and privamp cannot (and must not) match it.",
        "",
        "The machine was shared with other jobs: each setting ran every library "
        f"{args.repeats} time(s), interleaved, so the ratios within one row are fair but the "
        "absolute times are noisy (median CPU times).",
        "",
        "| setting | privamp | " + " | ".join(PEERS) + " | group vs single |",
        "|---|---|" + "---|" * len(PEERS) + "---|",
    ]
    for lab, cells, _ in rows:
        lines.append(f"| {lab} | " + " | ".join(cells) + " |")
    lines += ["", f"Settings where some peer was faster: {len(losses)} of {len(rows)}.", ""]
    for w, lab in sorted(losses):
        lines.append(f"- {lab}: fastest peer at {w:.2g}x privamp's CPU time")
    for kind in ("LOOSER", BELOW):
        hit = [(name, lab) for m, name, lab in marks if m == kind]
        lines += ["", f"{kind}: {len(hit)} peer estimates.", ""]
        lines += [f"- {lab}" for _, lab in hit]
    if out:
        Path(out).parent.mkdir(parents=True, exist_ok=True)
        Path(out).write_text("\n".join(lines) + "\n")
        print(f"wrote {out}", end="; ")
    print(f"{len(losses)} settings where a peer was faster; "
          f"{sum(m == 'LOOSER' for m, _, _ in marks)} LOOSER, "
          f"{sum(m == BELOW for m, _, _ in marks)} {BELOW}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
