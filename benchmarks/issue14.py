"""Issue 14 extras for benchmarks/run.py (side by side, one run): calibration, Chua et al.
Figure 1 settings, a fine grid (h = 1e-5), the epsilon curve, peak memory at T = 1e7 and
import time.

    python benchmarks/issue14.py      # prints the markdown section on its own
"""

from __future__ import annotations

import gc
import logging
import math
import statistics
import subprocess
import sys
import time
import tracemalloc
from collections.abc import Callable


def _time(fn: Callable[[], object], repeat: int = 3) -> tuple[object, float]:
    best, out = math.inf, None
    for _ in range(repeat):
        gc.collect()
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return out, best


def _medians_interleaved(fns: tuple[Callable[[], object], ...], repeat: int
                         ) -> tuple[object, ...]:
    """Median wall time of each of ``fns`` over ``repeat`` rounds (after one warm-up round),
    calling them in turn so that a change of load affects all alike; then the second
    function's last result."""
    times: list[list[float]] = [[] for _ in fns]
    out = None
    for r in range(repeat + 1):
        for i, fn in enumerate(fns):
            gc.collect()
            t0 = time.perf_counter()
            res = fn()
            if r:
                times[i].append(time.perf_counter() - t0)
            out = res if i == 1 else out
    return (*(statistics.median(t) for t in times), out)


def _peak_mib(fn: Callable[[], object]) -> float:
    gc.collect()
    tracemalloc.start()
    fn()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return peak / 2**20


def calibration() -> list[str]:
    import dp_accounting as dpa
    from dp_accounting import mechanism_calibration as mc
    from opacus.accountants.utils import get_noise_multiplier

    import privamp as pa

    eps, delta, q, T = 3.0, 1e-5, 0.01, 10_000
    probes: list[float] = []

    def ours(tol: float | None = None) -> float:
        probes.clear()
        return float(pa.calibrate(eps, delta, lambda s: pa.Training(
            pa.Gaussian(s), pa.Poisson(q), steps=T), callback=lambda v, g: probes.append(v),
            epsilon_tolerance=tol).value)

    def dpa_pld() -> float:
        return mc.calibrate_dp_mechanism(
            lambda: dpa.pld.PLDAccountant(value_discretization_interval=1e-4),
            lambda s: dpa.SelfComposedDpEvent(
                dpa.PoissonSampledDpEvent(q, dpa.GaussianDpEvent(s)), T),
            eps, delta, mc.LowerEndpointAndGuess(0.3, 1.0), tol=1e-3)

    def opacus(tol: float) -> float:
        return get_noise_multiplier(target_epsilon=eps, target_delta=delta, sample_rate=q,
                                    steps=T, accountant="rdp", epsilon_tolerance=tol)

    s_ours, t_ours = _time(ours, 3)
    n_probes = len(probes)
    tols = (1e-3, 1e-2)  # Opacus's epsilon_tolerance: the benchmark's and its default
    at_tol = []
    for tol in tols:
        s_t, t_t = _time(lambda tol=tol: ours(tol), 3)
        at_tol.append((tol, s_t, t_t, len(probes)))
    s_dpa, t_dpa = _time(dpa_pld, 1)
    lines = [
        "", f"## Calibration (epsilon {eps:g}, delta {delta:g}, q {q:g}, T {T})", "",
        "'ratio' = tool time / privamp time: dp-accounting against privamp's default search "
        "(rtol 1e-3 on sigma), Opacus against privamp stopping at Opacus's rule "
        "(epsilon_tolerance, the same tolerance). Fastest of 3 calls (dp-accounting: 1).", "",
        "| tool | sigma | time (s) | ratio (tool / privamp) |", "|---|---|---|---|",
        f"| privamp calibrate (default accountant, rtol 1e-3; {n_probes} probes) | "
        f"{s_ours:.5f} | {t_ours:.3f} | 1x |",
    ]
    for tol, s_t, t_t, n in at_tol:
        lines.append(f"| privamp calibrate, epsilon_tolerance {tol:g} ({n} probes) | "
                     f"{s_t:.5f} | {t_t:.3f} | 1x |")
    lines.append(f"| dp-accounting calibrate_dp_mechanism, PLD 1e-4 | {s_dpa:.5f} | "
                 f"{t_dpa:.3f} | {t_dpa / t_ours:.1f}x |")
    for tol, _, t_t, _ in at_tol:
        s_op, t_op = _time(lambda tol=tol: opacus(tol), 3)
        lines.append(f"| Opacus get_noise_multiplier (RDP, epsilon_tolerance {tol:g}) | "
                     f"{s_op:.5f} | {t_op:.3f} | {t_op / t_t:.1f}x |")
    return lines


def chua() -> list[str]:
    from dp_accounting.pld import privacy_loss_distribution as pld

    import privamp as pa

    T, delta = 100_000, 1e-6
    lines = ["", f"## Chua et al. Figure 1 settings (q = 1e-5, T = {T}, delta = {delta:g})",
             "", "| sigma | privamp default [lower, upper] | time (s) | dp-accounting PLD 1e-4 | "
             "time (s) | ratio | upper vs dp (relative) |", "|---|---|---|---|---|---|---|"]
    for sigma in (0.3, 0.5, 1.0):
        g, t = _time(lambda sigma=sigma: pa.Training(pa.Gaussian(sigma), pa.Poisson(1e-5),
                                                     steps=T).epsilon(delta), 1)
        ref, td = _time(lambda sigma=sigma: pld.from_gaussian_mechanism(
            sigma, sampling_prob=1e-5, value_discretization_interval=1e-4,
            use_connect_dots=True).self_compose(T).get_epsilon_for_delta(delta), 1)
        up, lo = float(g.upper.value), float(g.lower.value)
        lines.append(f"| {sigma:g} | [{lo:.6f}, {up:.6f}] | {t:.3f} | {ref:.6f} | {td:.3f} | "
                     f"{td / t:.1f}x | {(up - ref) / ref:+.2e} |")
    return lines


def fine_grid() -> list[str]:
    """privamp's PLD accountant and dp-accounting's at the same fine grid step h = 1e-5."""
    from dp_accounting.pld import privacy_loss_distribution as pld

    import privamp as pa
    from privamp.accountants.poisson import pld_analysis

    lines = ["", "## Fine grid (h = 1e-5): privamp PLD vs dp-accounting PLD, epsilon at 1e-5", "",
             "| q | sigma | T | privamp [lower, upper] | time (s) | dp-accounting | time (s) | "
             "ratio |", "|---|---|---|---|---|---|---|---|"]
    for q, sigma, T in ((256 / 60000, 1.1, 14063), (1e-3, 1.0, 10000), (1e-2, 1.0, 1000)):
        run = pa.Training(pa.Gaussian(sigma), pa.Poisson(q), steps=T)
        (up, lo), t = _time(lambda run=run: pld_analysis(run, h=1e-5).epsilon(1e-5), 1)
        ref, td = _time(lambda q=q, sigma=sigma, T=T: pld.from_gaussian_mechanism(
            sigma, sampling_prob=q, value_discretization_interval=1e-5,
            use_connect_dots=True).self_compose(T).get_epsilon_for_delta(1e-5), 1)
        lines.append(f"| {q:.6g} | {sigma:g} | {T} | [{float(lo.value):.7f}, "
                     f"{float(up.value):.7f}] | {t:.3f} | {ref:.7f} | {td:.3f} | {td / t:.1f}x |")
    return lines


def curve_and_memory() -> list[str]:
    import privamp as pa

    q, sigma = 256 / 60000, 1.1

    def one() -> object:
        return pa.Training(pa.Gaussian(sigma), pa.Poisson(q), epochs=60).epsilon(1e-5)

    def hundred() -> object:
        run = pa.Training(pa.Gaussian(sigma), pa.Poisson(q), steps=14063)
        return run.epsilon_curve(1e-5)

    def epochs() -> object:
        return pa.Training(pa.Gaussian(sigma), pa.Poisson(q), epochs=60).epsilon_curve(1e-5)

    t1, t100, t60, c = _medians_interleaved((one, hundred, epochs), 7)
    width = float(max((c.upper.value - c.lower.value) / c.upper.value))
    lines = ["", "## Epsilon curve of the canonical run (q = 256/60000, sigma = 1.1, 14063 steps)",
             "", "Medians of 7 warm calls, interleaved in one process.", "",
             "| query | time (s) | cost / one query |", "|---|---|---|",
             f"| one query (default) | {t1:.3f} | 1x |",
             f"| epsilon_curve, 100 checkpoints (max width {100 * width:.3f}%) | {t100:.3f} | "
             f"{t100 / t1:.2f}x |",
             f"| epsilon_curve, 60 epoch ends | {t60:.3f} | {t60 / t1:.2f}x |", "",
             f"Target (100 checkpoints <= 2x one query): {'met' if t100 <= 2 * t1 else 'NOT met'}."]
    lines += ["", "## Peak memory (tracemalloc) of the default call at T = 1e7", "",
              "| q | sigma | privamp default (MiB) | dp-accounting PLD 1e-4 (MiB) |",
              "|---|---|---|---|"]
    for q7, s7 in ((1e-3, 1.0),):
        m = _peak_mib(lambda q7=q7, s7=s7: pa.Training(pa.Gaussian(s7), pa.Poisson(q7),
                                                       steps=10**7).epsilon(1e-5))
        from dp_accounting.pld import privacy_loss_distribution as pld

        md = _peak_mib(lambda q7=q7, s7=s7: pld.from_gaussian_mechanism(
            s7, sampling_prob=q7, value_discretization_interval=1e-4,
            use_connect_dots=True).self_compose(10**7).get_epsilon_for_delta(1e-5))
        lines.append(f"| {q7:g} | {s7:g} | {m:.1f} | {md:.1f} |")
    mb = _peak_mib(lambda: pa.Training(pa.Gaussian(1.0), pa.BalancedIteration(1000, 10),
                                       epochs=1).epsilon(1e-5))
    lines += ["", "Balanced iteration (T = 1000, k = 10, sigma = 1, delta = 1e-5), default call: "
              f"peak {mb:.1f} MiB (target <= 150 MB; at T = 1e7 above: <= 100 MB)."]
    return lines


def import_time() -> list[str]:
    def t(mod: str) -> float:
        code = f"import time; t = time.perf_counter(); import {mod}; " \
               "print(time.perf_counter() - t)"
        return min(float(subprocess.run([sys.executable, "-c", code], capture_output=True,
                                        text=True, check=True).stdout) for _ in range(3))

    a, b = t("privamp"), t("dp_accounting")
    return ["", "## Import time (fresh interpreter, best of 3)", "",
            "| module | time (s) |", "|---|---|", f"| privamp | {a:.3f} |",
            f"| dp_accounting | {b:.3f} |"]


def extras() -> list[str]:
    logging.disable(logging.WARNING)
    out: list[str] = []
    for part in (calibration, chua, fine_grid, curve_and_memory, import_time):
        try:
            out += part()
        except Exception as exc:  # noqa: BLE001 - a failing section is reported, not fatal
            out += ["", f"{part.__name__} failed: {type(exc).__name__}: {exc}"]
        print(f"done {part.__name__}", file=sys.stderr)
    return out


if __name__ == "__main__":
    print("\n".join(extras()))
