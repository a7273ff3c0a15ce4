"""``privamp serve``'s JSON API and page against a real server process (127.0.0.1, a free
port): the interval against closed forms (deterministic batches: the Gaussian mechanism
composed once per epoch, Balle & Wang 2018's exact delta(epsilon)), calibration against the
same closed form, the loader rules against PyTorch's own DataLoader read by ``scheme_of``,
bad inputs (a 4xx naming the field, also next to the field on the page), size limits, the
time budget (a query over it is stopped, the worker replaced), the OpenAPI schema."""

from __future__ import annotations

import math
import re
from urllib.parse import parse_qsl

import pytest
from scipy.optimize import brentq
from scipy.stats import norm
from test_serve_server import httpx, started_server

BUDGET = 6

#: a server process takes 10-20 s to start on a loaded 2-core machine
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def url():
    with started_server(budget=BUDGET) as u:
        yield u


def gaussian_delta(eps: float, mu: float) -> float:
    """Balle & Wang 2018, Thm 8: delta(epsilon) of a Gaussian of sensitivity/sigma = mu."""
    return norm.cdf(-eps / mu + mu / 2) - math.exp(eps) * norm.cdf(-eps / mu - mu / 2)


def gaussian_epsilon(delta: float, mu: float) -> float:
    return brentq(lambda e: gaussian_delta(e, mu) - delta, 0, 500, xtol=1e-12)


def get(url: str, path: str, **params):
    return httpx.get(url + path, params=params, timeout=60)


def test_deterministic_interval_is_the_composed_gaussian(url):
    r = get(url, "/api/v1/epsilon", sigma=2, batch_size=100, dataset_size=1000, epochs=4,
            sampler="deterministic", relation="zero-out", delta=1e-5)
    assert r.status_code == 200, r.text
    a = r.json()["interval"]
    exact = gaussian_epsilon(1e-5, math.sqrt(4) / 2)
    assert a["lower"]["value"] <= exact * (1 + 1e-6)
    assert a["upper"]["value"] >= exact * (1 - 1e-6)
    assert a["upper"]["value"] == pytest.approx(exact, rel=1e-3)
    assert a["upper"]["docs"] == "chua2024" and "Chua" in a["upper"]["source"]
    assert a["steps"] == 40


def test_calibrate_meets_the_closed_form(url):
    r = get(url, "/api/v1/calibrate", batch_size=100, dataset_size=1000, epochs=4,
            sampler="deterministic", relation="zero-out", delta=1e-5, target_epsilon=3)
    assert r.status_code == 200, r.text
    sigma = r.json()["calibrate"]["noise_multiplier"]
    mu = brentq(lambda m: gaussian_delta(3, m) - 1e-5, 0.01, 20, xtol=1e-12)
    smallest = math.sqrt(4) / mu  # the exact smallest sigma meeting (3, 1e-5)
    assert smallest * (1 - 1e-9) <= sigma <= smallest * 1.002


def test_compare_table_and_under_report_factor(url):
    r = get(url, "/api/v1/compare", sigma=1.1, batch_size=256, dataset_size=60000,
            epochs=2, sampler="shuffle", relation="zero-out")
    assert r.status_code == 200, r.text
    body = r.json()
    rows = {row["sampler"]: row for row in body["rows"]}
    assert rows["shuffle"]["this"] and "poisson" in rows and "deterministic" in rows
    poisson_up = body["poisson_upper"]
    # the shuffled run's certified lower bound is above the Poisson upper bound
    assert rows["shuffle"]["lower"]["value"] > 2 * poisson_up


def torch_scheme(b, n, **options):
    torch = pytest.importorskip("torch")
    from privamp.integrations.torch import scheme_of

    loader = torch.utils.data.DataLoader(range(n), batch_size=b, **options)
    return repr(scheme_of(loader))


@pytest.mark.parametrize("shuffle, drop_last", [(True, False), (False, True), (True, True)])
def test_pytorch_options_read_like_scheme_of(url, shuffle, drop_last):
    r = get(url, "/api/v1/epsilon", source="pytorch", shuffle=shuffle, drop_last=drop_last,
            batch_size=64, dataset_size=1000, epochs=1, relation="zero-out")
    assert r.status_code == 200, r.text
    assert r.json()["interval"]["scheme"] == torch_scheme(64, 1000, shuffle=shuffle,
                                                          drop_last=drop_last)


def test_pytorch_replacement_reads_like_scheme_of(url):
    torch = pytest.importorskip("torch")
    sampler = torch.utils.data.RandomSampler(range(1000), replacement=True)
    want = torch_scheme(50, 1000, sampler=sampler)
    r = get(url, "/api/v1/epsilon", source="pytorch", torch_sampler="replacement",
            batch_size=50, dataset_size=1000, steps=5, relation="zero-out")
    assert r.status_code == 200, r.text
    assert r.json()["interval"]["scheme"] == want


def test_loader_source_through_the_api(url):
    r = get(url, "/api/v1/epsilon", batch_size=64, dataset_size=1000, steps=20,
            source="opacus", poisson_sampling="true")
    assert r.status_code == 200, r.text
    assert r.json()["interval"]["scheme"] == "Poisson(rate=0.0625)"


@pytest.mark.parametrize("params, field", [
    ({"sigma": ""}, None), ({"sigma": "nan"}, "sigma"), ({"sigma": "-1"}, "sigma"),
    ({"sigma": "1e999"}, "sigma"), ({"sigma": "abc"}, "sigma"),
    ({"sigma": "__import__('os')"}, "sigma"), ({"batch_size": "2.5"}, "batch_size"),
    ({"batch_size": "70000"}, "batch_size"), ({"dataset_size": "0"}, "dataset_size"),
    ({"delta": "1"}, "delta"), ({"delta": "0"}, "delta"), ({"epochs": "-3"}, "epochs"),
    ({"sampler": "magic"}, "sampler"), ({"relation": "x"}, "relation"),
    ({"steps": "10", "epochs": "2"}, "steps"), ({"mechanism": "laplace"}, "scale"),
    ({"bogus": "1"}, "bogus"), ({"shuffle": "maybe", "source": "pytorch"}, "shuffle"),
    ({"source": "pytorch", "shuffle": "false", "torch_sampler": "replacement"}, "shuffle"),
    ({"source": "jax", "strategy": "cyclic-poisson", "cycle_length": "4",
      "relation": "zero-out"}, None),
    ({"target_epsilon": "0"}, "target_epsilon"), ({"points": "500"}, "points"),
])
def test_bad_input_names_its_field(url, params, field):
    base = {"batch_size": 64, "dataset_size": 1000, "steps": 3}
    if "epochs" in params:
        base.pop("steps")
    r = get(url, "/api/v1/epsilon", **{**base, **params})
    if field is None:
        assert r.status_code == 200, r.text
        return
    assert r.status_code == 400, r.text
    err = r.json()["error"]
    assert err["field"] == field
    assert field in err["message"] and "\n" not in err["message"]
    assert "Traceback" not in r.text


def test_page_shows_the_error_next_to_the_field(url):
    r = get(url, "/", sigma="-2", batch_size=64, dataset_size=1000, steps=3)
    assert r.status_code == 400
    m = re.search(r'id="err-sigma"[^>]*>([^<]+)<', r.text)
    assert m and "sigma must be a number in [0.1, 1000]" in m.group(1)
    assert 'class="field invalid" id="box-sigma"' in r.text


def test_page_answer_plot_and_share_link(url):
    r = get(url, "/", sigma=1.0, batch_size=100, dataset_size=10000, epochs=1,
            sampler="poisson", points=3)
    assert r.status_code == 200
    assert 'id="interval-value"' in r.text and '<polygon class="band"' in r.text
    # the page streams a progress line as each part of the answer ends (9 samplers + curve)
    done = re.findall(r"<li>[^<]*: done \((\d+) of (\d+), [\d.]+ s of the 6 s budget\)", r.text)
    assert [int(k) for k, _ in done] == list(range(1, 11)) and {n for _, n in done} == {"10"}
    share = re.search(r'id="share-link" href="([^"]+)"', r.text).group(1)
    assert dict(parse_qsl(share.split("?", 1)[1].replace("&amp;", "&"))) == {
        "sigma": "1", "batch_size": "100", "dataset_size": "10000", "epochs": "1",
        "points": "3"}
    assert "privamp epsilon --mechanism gaussian --sigma 1 --scheme poisson" in r.text


def test_limits_and_bodies(url):
    assert httpx.get(url + "/api/v1/epsilon?sigma=" + "1" * 3000).status_code == 414
    assert httpx.post(url + "/api/v1/epsilon", content=b"{" * 9000).status_code == 413
    r = httpx.post(url + "/api/v1/epsilon", content=b"[1, 2]")
    assert r.status_code == 400 and r.json()["error"]["field"] == "body"
    r = httpx.post(url + "/api/v1/epsilon", content=b"\xff\xfe")
    assert r.status_code == 400
    r = httpx.post(url + "/api/v1/epsilon", json={"sigma": 2, "steps": 3, "batch_size": 10,
                                                   "dataset_size": 100, "sampler": "poisson"})
    assert r.status_code == 200 and r.json()["interval"]["upper"]["value"] > 0
    assert httpx.get(url + "/static/../../etc/passwd").status_code == 404
    assert httpx.get(url + "/docs/..%2Fpyproject").status_code == 404


@pytest.mark.slow
def test_over_budget_is_stopped_and_the_worker_replaced():
    # its own server with a 2 s budget (any query privamp answers slowly is a speed bug to be
    # fixed, so the module server's budget cannot rely on one): the exact with-replacement
    # pair over 1,171 steps at delta 1e-12 takes about 6 s on a quiet machine
    with started_server(budget=2, workers=2) as u:
        r = get(u, "/api/v1/epsilon", sampler="with-replacement", batch_size=256,
                dataset_size=60000, epochs=5, delta=1e-12)
        assert r.status_code == 408
        assert "over the 2 s budget" in r.json()["error"]["message"]
        r = get(u, "/api/v1/epsilon", sampler="poisson", sigma=1.3, steps=10)
        assert r.status_code == 200


def test_openapi_schema_lists_every_field(url):
    schema = httpx.get(url + "/api/openapi.json").json()
    assert schema["openapi"].startswith("3.")
    params = {p["name"]: p["schema"] for p in schema["paths"]["/api/v1/epsilon"]["get"]
              ["parameters"]}
    assert params["sigma"]["minimum"] == 0.1 and params["sigma"]["maximum"] == 1000
    assert params["delta"]["exclusiveMinimum"] == 0
    assert "poisson" in params["sampler"]["enum"]
    assert set(schema["paths"]) >= {"/api/v1/epsilon", "/api/v1/calibrate",
                                    "/api/v1/answer"}
