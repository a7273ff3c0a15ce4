"""Sweeps (issue 29): rows equal the hand-written serial loop, the store reuses what is
finished (and nothing of another version), declined configurations are rows, progress and
callbacks, CSV, calibration tables checked by dp-accounting, heat maps, the CLI, and a
2-worker local Dask cluster giving the serial rows."""

from __future__ import annotations

import csv
import io
import subprocess
import sys
from pathlib import Path

import pytest

import privamp as pa
from privamp.cli import main
from privamp.sweep import Store, SweepResult, grid_from_mapping, sweep

#: cheap configurations: Poisson under the RDP accountant (milliseconds each)
CHEAP = {"sweep": {"accountant": "rdp"},
         "grid": {"sampler": "poisson", "sigma": [0.8, 1.0, 1.6], "rate": [0.01, 0.05],
                  "steps": [10, 100], "delta": 1e-5}}


def plain(rows):
    """Rows without their timing (the only column that differs between runs)."""
    return [{k: v for k, v in r.items() if k != "seconds"} for r in rows]


def test_rows_equal_the_serial_loop():
    r = sweep(CHEAP, workers=1, progress=False)
    assert len(r) == 12 and r.computed == 12 and r.counts()["answered"] == 12
    for row in r:
        run = pa.Training(pa.Gaussian(row["sigma"]), pa.Poisson(row["rate"]),
                          steps=row["steps"])
        g = run.epsilon(1e-5, accountant="rdp")
        assert row["epsilon_upper"] == g.upper.value
        assert row["upper_source"] == g.upper.source
        assert row["epsilon_lower"] is None and row["version"] == pa.__version__
    assert [(x["sigma"], x["rate"], x["steps"]) for x in r][:3] == [
        (0.8, 0.01, 10), (0.8, 0.01, 100), (0.8, 0.05, 10)]  # grid order


def test_store_reuses_finished_rows_and_computes_only_the_missing(tmp_path):
    db = tmp_path / "s.sqlite"
    small = {"sweep": CHEAP["sweep"], "grid": {**CHEAP["grid"], "sigma": [0.8, 1.0]}}
    first = sweep(small, store=db, workers=1, progress=False)
    assert first.computed == 8
    again = sweep(CHEAP, store=db, workers=1, progress=False)  # one more sigma
    assert (again.computed, again.reused) == (4, 8)
    assert plain(again.rows[:8]) == plain(first.rows)
    with Store(db, pa.__version__) as s:
        assert s.count() == 12
        handed = [k for k, _, _ in s.attempts()]
    assert len(handed) == len(set(handed)) == 12  # nothing computed twice
    assert plain(sweep(CHEAP, store=db, workers=1, progress=False).rows) == plain(again.rows)


def test_rows_of_another_version_are_not_reused(tmp_path):
    db = tmp_path / "s.sqlite"
    g = grid_from_mapping(CHEAP)
    with Store(db, "0.0.0-old") as s:
        s.put([(k, {"status": "answered", "epsilon_upper": 0.0}) for k in g.keys])
    r = sweep(g, store=db, workers=1, progress=False)
    assert r.other_versions == 12 and r.computed == 12
    assert "another privamp version not reused" in r.summary()
    assert all(row["epsilon_upper"] > 0 for row in r)


def test_declined_configuration_is_a_row_with_its_reason():
    r = sweep({"sampler": "shuffle", "batch_size": 100, "dataset_size": 1000,
               "sigma": 1.0, "epochs": [1.5], "delta": 1e-5}, accountant="pld",
              workers=1, progress=False)
    (row,) = r.rows
    assert row["status"] == "refused" and row["reason"].startswith("not applicable")
    assert row["epsilon_upper"] is None
    assert r.counts() == {"answered": 0, "refused": 1, "failed": 0}


def test_progress_lines_and_callback(capsys, monkeypatch):
    seen = []
    sweep(CHEAP, workers=1, callback=lambda done, total, row: seen.append((done, total)))
    err = capsys.readouterr().err
    assert seen == [(i, 12) for i in range(1, 13)]
    assert "sweep: 100%" in err and "12/12" in err and "\r" not in err  # log lines
    monkeypatch.setenv("PRIVAMP_PROGRESS", "0")
    sweep(CHEAP, workers=1)
    assert capsys.readouterr().err == ""


def test_csv_round_trip_and_pandas(tmp_path):
    r = sweep(CHEAP, workers=1, progress=False)
    text = r.to_csv(tmp_path / "r.csv")
    back = list(csv.DictReader(io.StringIO(text)))
    assert [float(b["epsilon_upper"]) for b in back] == [x["epsilon_upper"] for x in r]
    assert list(back[0]) == r.columns
    pd = pytest.importorskip("pandas")
    frame = r.to_pandas()
    assert isinstance(frame, pd.DataFrame) and len(frame) == 12


@pytest.mark.slow
def test_calibration_table_meets_the_target_by_dp_accounting():
    from dp_accounting.pld import privacy_loss_distribution as pld

    q, T, eps, delta = 0.02, 50, 1.0, 1e-5
    t = pa.calibration_table({"sampler": "poisson", "rate": q, "steps": T}, epsilon=eps,
                             delta=delta, accountant="pld", workers=1, progress=False)
    (row,) = t.rows
    assert row["status"] == "answered" and row["kind"] == "upper"

    def dpa(sig):
        d = pld.from_gaussian_mechanism(sig, sampling_prob=q, value_discretization_interval=1e-4)
        return d.self_compose(T).get_epsilon_for_delta(delta)

    assert dpa(row["noise"]) <= eps + 2e-3   # meets the target (up to dp-accounting's grid)
    assert dpa(row["noise"] * 0.99) > eps    # and is within 1% of the smallest that does


def test_heatmap_one_panel_per_sampler(tmp_path):
    pytest.importorskip("matplotlib")
    from privamp.sweep.plots import heatmap

    r = sweep(CHEAP, workers=1, progress=False)
    with pytest.raises(ValueError, match="steps still vary"):
        heatmap(r, "sigma", "rate")
    fig = heatmap(r, "sigma", "rate", where={"steps": 100}, path=tmp_path / "h.png")
    assert (tmp_path / "h.png").stat().st_size > 1000
    assert len([a for a in fig.axes if a.get_title().startswith("sampler")]) == 1


def test_cli_sweep_and_plan(tmp_path, capsys):
    grid = tmp_path / "g.toml"
    grid.write_text('[sweep]\naccountant = "rdp"\n[grid]\nsampler = "poisson"\n'
                    'sigma = [1.0, 2.0]\nrate = 0.01\nsteps = 10\ndelta = 1e-5\n')
    assert main(["sweep", str(grid), "--workers", "1", "--out", str(tmp_path / "o.csv")]) == 0
    assert (tmp_path / "g.sqlite").exists() and (tmp_path / "o.csv").read_text().count("\n") == 3
    assert "2 computed now" in capsys.readouterr().err
    assert main(["sweep", str(grid), "--workers", "1"]) == 0
    out = capsys.readouterr()
    assert "0 computed now, 2 from the store" in out.err and "sigma" in out.out
    grid.write_text(grid.read_text().replace("rate = 0.01", "rate = 2.0"))
    assert main(["sweep", str(grid), "--workers", "1"]) == 2
    err = capsys.readouterr().err
    assert f"{grid}:6: rate:" in err and "nothing ran" in err
    assert main(["plan", "--sampler", "poisson", "--rate", "0.01", "--steps", "10",
                 "--epsilon", "2", "--delta", "1e-5", "--accountant", "rdp", "--workers", "1",
                 "--no-store"]) == 0
    out = capsys.readouterr().out
    assert "noise" in out.splitlines()[0] and "upper" in out


def test_pa_sweep_is_the_callable_package():
    import privamp.sweep.runner as runner  # the package is not hidden by the function

    assert pa.sweep is sys.modules["privamp.sweep"] and callable(pa.sweep)
    r = pa.sweep(CHEAP, workers=1, progress=False)
    assert plain(r.rows) == plain(runner.sweep(CHEAP, workers=1, progress=False).rows)
    assert "sweep" in pa.__all__ and "calibration_table" in pa.__all__


@pytest.mark.slow
def test_import_privamp_imports_no_dask():
    code = "import sys, privamp; print(any(m.split('.')[0] in ('dask', 'distributed') " \
           "for m in sys.modules))"
    src = str(Path(__file__).resolve().parents[2] / "src")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env={"PYTHONPATH": src, "PATH": "/usr/bin:/bin"}, timeout=120)
    assert out.stdout.strip() == "False", out.stderr


@pytest.mark.slow
def test_two_local_dask_workers_give_the_serial_rows():
    pytest.importorskip("distributed")
    serial = sweep(CHEAP, workers=1, progress=False)
    parallel = sweep(CHEAP, workers=2, progress=False)
    assert isinstance(parallel, SweepResult) and parallel.meta["engine"] == "local dask"
    assert plain(parallel.rows) == plain(serial.rows)


def test_failure_is_a_row_and_retry_failed_computes_it_again(tmp_path, monkeypatch):
    import privamp.sweep.runs as runs

    real = runs.build_run

    def flaky(config, *args):
        if config["sigma"] == 1.6:
            raise RuntimeError("disk on fire")
        return real(config, *args)

    db = tmp_path / "s.sqlite"
    monkeypatch.setattr(runs, "build_run", flaky)
    r = sweep(CHEAP, store=db, workers=1, progress=False)
    failed = [x for x in r if x["status"] == "failed"]
    assert len(failed) == 4 and failed[0]["reason"] == "RuntimeError: disk on fire"
    monkeypatch.setattr(runs, "build_run", real)
    assert sweep(CHEAP, store=db, workers=1, progress=False).computed == 0  # kept as rows
    again = sweep(CHEAP, store=db, workers=1, progress=False, retry_failed=True)
    assert again.computed == 4 and again.counts()["answered"] == 12


@pytest.mark.slow
def test_calibration_table_largest_rate_by_dp_accounting():
    from dp_accounting.pld import privacy_loss_distribution as pld

    sigma, T, eps, delta = 1.0, 100, 2.0, 1e-5
    t = pa.calibration_table({"sampler": "poisson", "sigma": sigma, "steps": T}, epsilon=eps,
                             delta=delta, knob="rate", accountant="pld", workers=1,
                             progress=False)
    (row,) = t.rows
    assert row["status"] == "answered" and row["kind"] == "lower"  # at most the largest rate

    def dpa(q):
        d = pld.from_gaussian_mechanism(sigma, sampling_prob=q,
                                        value_discretization_interval=1e-4)
        return d.self_compose(T).get_epsilon_for_delta(delta)

    assert dpa(row["rate"]) <= eps + 2e-3 and dpa(row["rate"] * 1.01) > eps
