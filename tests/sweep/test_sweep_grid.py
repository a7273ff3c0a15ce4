"""Grid files (issue 29): the product and explicit lists, canonical configurations, and every
refusal before anything runs, with the file, the line and the key."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from privamp.sweep import GridError, grid_from_mapping, load_grid, sweep
from privamp.sweep.runs import canonical_key

GOOD = """\
[sweep]
task = "epsilon"
accountant = "rdp"

[grid]
sampler = ["poisson", "shuffle"]
sigma = [0.8, 1.0, 1.5]
batch_size = 100
dataset_size = 10000
epochs = [1, 2]
delta = 1e-5

[[configs]]
sampler = "balanced-iteration"
balanced_steps = 100
sigma = 1.0
epochs = 2
delta = 1e-5
"""


def write(tmp_path: Path, text: str, name: str = "grid.toml") -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return path


def refusal(path: Path) -> GridError:
    with pytest.raises(GridError) as info:
        load_grid(path)
    return info.value


def test_product_then_explicit_configs_in_file_order(tmp_path):
    g = load_grid(write(tmp_path, GOOD))
    assert len(g) == 2 * 3 * 2 + 1
    first = g.configs[0]
    assert (first["sampler"], first["sigma"], first["epochs"]) == ("poisson", 0.8, 1.0)
    assert (g.configs[1]["sigma"], g.configs[1]["epochs"]) == (0.8, 2.0)  # last key fastest
    assert g.configs[-1]["sampler"] == "balanced-iteration"
    assert "batch_size" not in g.configs[-1]  # not a key of balanced iteration
    assert all(c["accountant"] == "rdp" and c["task"] == "epsilon" for c in g.configs)


def test_canonical_configurations_merge_spellings():
    a = grid_from_mapping({"sampler": "poisson", "rate": 0.01, "sigma": 1, "steps": 10,
                           "delta": 1e-5})
    b = grid_from_mapping({"sampler": "poisson", "rate": 0.01, "sigma": 1.0, "steps": 10.0,
                           "delta": 1e-5, "mechanism": "gaussian", "relation": "add-remove",
                           "group": 1, "sensitivity": 1})
    assert a.keys == b.keys
    # Poisson given a rate uses no batch size: its configurations are one (shuffle's two)
    c = grid_from_mapping({"sampler": ["poisson", "shuffle"], "rate": 0.01, "sigma": 1.0,
                           "steps": 10, "delta": 1e-5, "batch_size": [10, 20],
                           "dataset_size": 1000})
    assert [x["sampler"] for x in c.configs] == ["poisson", "shuffle", "shuffle"]
    assert canonical_key(c.configs[0]) == c.keys[0]


def test_unknown_key_gives_file_line_and_key(tmp_path):
    path = write(tmp_path, GOOD.replace("batch_size = 100", "batchsize = 100"))
    err = refusal(path)
    (p,) = err.problems
    assert (p.file, p.line, p.key) == (str(path), 8, "batchsize")
    assert "unknown key" in p.message and "batch_size" in p.message  # the suggestion
    assert f"{path}:8: batchsize:" in str(err)


def test_value_out_of_range(tmp_path):
    path = write(tmp_path, GOOD.replace("delta = 1e-5\n\n", "delta = [1e-5, 2.0]\n\n"))
    (p,) = refusal(path).problems
    assert (p.line, p.key) == (11, "delta") and "(0, 1)" in p.message
    path = write(tmp_path, GOOD.replace("sigma = [0.8, 1.0, 1.5]", "sigma = [0.8, -1]"))
    (p,) = refusal(path).problems
    assert (p.line, p.key) == (7, "sigma")
    path = write(tmp_path, GOOD.replace('task = "epsilon"', 'task = "epsilons"'))
    (p,) = refusal(path).problems
    assert (p.line, p.key) == (2, "task")


def test_impossible_combination_shuffle_batch_over_dataset(tmp_path):
    path = write(tmp_path, GOOD.replace("batch_size = 100", "batch_size = [100, 20000]"))
    problems = refusal(path).problems
    assert {(p.line, p.key) for p in problems} == {(8, "batch_size")}
    assert any("shuffle" in p.message for p in problems)


def test_explicit_config_refusal_cites_its_own_lines(tmp_path):
    path = write(tmp_path, GOOD.replace("balanced_steps = 100", "balanced_steps = 0"))
    (p,) = refusal(path).problems
    assert (p.line, p.key) == (15, "balanced_steps")
    path = write(tmp_path, GOOD.replace("epochs = 2\ndelta", "epochs = 2\nsteps = 5\ndelta"))
    (p,) = refusal(path).problems
    assert p.key == "steps" and "exactly one of steps or epochs" in p.message
    assert p.line == 18


def test_missing_and_unused_keys(tmp_path):
    path = write(tmp_path, GOOD.replace("delta = 1e-5\n\n", "\n"))
    problems = refusal(path).problems
    assert problems[0].key == "delta" and "required by task" in problems[0].message
    assert problems[0].line == 5  # the [grid] header
    path = write(tmp_path, GOOD.replace("delta = 1e-5\n\n", "delta = 1e-5\ntheta = 0.7\n\n"))
    (p,) = refusal(path).problems
    assert (p.line, p.key) == (12, "theta") and "used by no configuration" in p.message


def test_syntax_error_and_unknown_table(tmp_path):
    (p,) = refusal(write(tmp_path, GOOD.replace("sigma = [0.8", "sigma = [[0.8"))).problems
    assert p.line in (7, 8) and "TOML" in p.message  # where tomllib sees it
    (p,) = refusal(write(tmp_path, GOOD + "\n[grids]\nsigma = 1\n")).problems
    assert (p.line, p.key) == (20, "grids")


def test_yaml_grid_with_lines(tmp_path):
    pytest.importorskip("yaml")
    text = """\
    sweep:
      task: delta
    grid:
      sampler: [poisson]
      rate: 0.01
      sigma: [1.0, 2.0]
      steps: 10
      epsilon: 1.0
      typo: 3
    """
    (p,) = refusal(write(tmp_path, text, "g.yaml")).problems
    assert (p.line, p.key) == (9, "typo")
    g = load_grid(write(tmp_path, text.replace("  typo: 3\n", ""), "g.yml"))
    assert len(g) == 2 and g.task == "delta"


def test_refused_grid_runs_nothing(tmp_path):
    path = write(tmp_path, GOOD.replace("batch_size = 100", "batch_size = [100, 20000]"))
    store = tmp_path / "s.sqlite"
    with pytest.raises(GridError):
        sweep(path, store=store, workers=1, progress=False)
    assert not store.exists()


def test_calibration_grid_needs_no_sigma_and_a_target():
    with pytest.raises(GridError) as info:
        grid_from_mapping({"sweep": {"task": "calibrate"},
                           "grid": {"sampler": "poisson", "rate": 0.01, "steps": 10,
                                    "delta": 1e-5}})
    assert info.value.problems[0].key == "epsilon"
    g = grid_from_mapping({"sweep": {"task": "calibrate"},
                           "grid": {"sampler": "poisson", "rate": 0.01, "steps": 10,
                                    "delta": 1e-5, "epsilon": [1.0, 2.0]}})
    assert len(g) == 2 and "sigma" not in g.configs[0]
    with pytest.raises(GridError) as info:  # the knob is tuned, not given
        grid_from_mapping({"sweep": {"task": "calibrate", "knob": "noise"},
                           "grid": {"sampler": "poisson", "rate": 0.01, "steps": 10,
                                    "delta": 1e-5, "epsilon": 1.0, "sigma": 1.0}})
    assert info.value.problems[0].key == "sigma"


def test_calibration_knob_other_than_noise():
    g = grid_from_mapping({"sweep": {"task": "calibrate", "knob": "rate"},
                           "grid": {"sampler": "poisson", "sigma": 1.0, "steps": 100,
                                    "delta": 1e-5, "epsilon": 2.0}})
    assert "rate" not in g.configs[0] and g.configs[0]["knob"] == "rate"
    with pytest.raises(GridError) as info:  # shuffle has no rate to tune
        grid_from_mapping({"sweep": {"task": "calibrate", "knob": "rate"},
                           "grid": {"sampler": "shuffle", "sigma": 1.0, "batch_size": 10,
                                    "dataset_size": 100, "epochs": 1, "delta": 1e-5,
                                    "epsilon": 2.0}})
    assert info.value.problems[0].key == "knob"


def test_tasks_spread_the_expensive_first_and_alone():
    from privamp.sweep.runner import batches  # = tasks.plan_tasks

    g = grid_from_mapping({"sampler": ["shuffle", "poisson"], "sigma": [1.0, 2.0],
                           "batch_size": 10, "dataset_size": [100, 200, 300, 400, 500],
                           "epochs": 1, "delta": 1e-5})
    configs = list(g.configs)
    tasks = batches(list(g.keys), configs, workers=2)
    assert sorted(i for t in tasks for i in t) == list(range(len(configs)))  # each once
    first = [configs[i]["sampler"] for i in tasks[0]]
    assert first == ["shuffle"]  # an expensive configuration goes first, alone
    assert all(len(t) == 1 for t in tasks if configs[t[0]]["sampler"] == "shuffle")
    assert len(tasks) >= 2 * 2  # several tasks a worker
