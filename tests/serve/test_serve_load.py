"""``privamp serve`` under abuse and load, on a server process of its own (127.0.0.1, a free
port): 1,000 random and malformed requests (no server error, every 4xx one line naming a
field), and 50 concurrent clients for 60 s on cached and uncached queries with a burst of
expensive ones (no error; p95 latency of each kind printed; the cheap queries are not
starved: the heavy lane never holds the last worker)."""

from __future__ import annotations

import json
import random
import string
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
from test_serve_server import httpx, started_server

pytestmark = pytest.mark.slow

PATHS = ["/", "/api/v1/epsilon", "/api/v1/compare", "/api/v1/curve", "/api/v1/calibrate",
         "/api/v1/answer", "/api/openapi.json", "/static/style.css", "/docs/pld",
         "/api/v1/nope", "/docs/../../etc/passwd", "/static/%2e%2e/app.py"]
NAMES = ["mechanism", "sigma", "scale", "theta", "batch_size", "dataset_size", "epochs",
         "steps", "delta", "relation", "source", "sampler", "shuffle", "drop_last",
         "torch_sampler", "poisson_sampling", "strategy", "cycle_length", "target_epsilon",
         "points", "__class__", "x" * 60, "", "sigma[]"]


def junk(rng: random.Random) -> object:
    """A random value: numbers in and out of range, special floats, text, wrong types."""
    pick = rng.randrange(14)
    if pick == 0:
        return rng.choice(["nan", "inf", "-inf", "NaN", "1e309", "-0", "0x1p3", "1_000"])
    if pick == 1:
        return "".join(rng.choice(string.printable) for _ in range(rng.randrange(1, 30)))
    if pick == 2:
        return rng.choice(["🙂", "é", "\x00", "<script>alert(1)</script>", "' OR 1=1 --",
                           "{{7*7}}", "${jndi:x}", "__import__('os').system('id')"])
    if pick == 3:
        return str(rng.uniform(-1e6, 1e6))
    if pick == 4:
        return str(10 ** rng.randrange(0, 40))
    if pick == 5:
        return rng.choice(["true", "false", "on", "yes", "maybe"])
    if pick == 6:
        return rng.choice(["gaussian", "laplace", "rr", "poisson", "shuffle", "pytorch",
                           "jax", "opacus", "zero-out", "balls-in-bins", "b-min-sep"])
    if pick == 7:
        return rng.choice([[1, 2], {"a": 1}, None, True, 1.5, -3, 10**30])
    return str(rng.choice([0.5, 1, 2, 3, 10, 64, 100, 1000, 1e-5, 0.3, 20]))


def one_request(rng: random.Random, url: str, client) -> httpx.Response:
    path = rng.choice(PATHS)
    params = {rng.choice(NAMES): junk(rng) for _ in range(rng.randrange(0, 7))}
    if rng.random() < 0.3:  # near-valid: small runs, so valid ones finish in time
        params.update({"batch_size": 10, "dataset_size": 100, "steps": rng.randrange(1, 20),
                       "points": 2})
        params.pop("epochs", None)
    kind = rng.randrange(5)
    if kind == 0:
        body: bytes = rng.randbytes(rng.randrange(0, 200))
        return client.post(url + path, content=body)
    if kind == 1:
        return client.post(url + path, content=json.dumps(params).encode())
    if kind == 2:
        return client.request(rng.choice(["PUT", "DELETE", "PATCH"]), url + path)
    text = {k: v if isinstance(v, str) else json.dumps(v) for k, v in params.items()}
    return client.get(url + path, params=text)


def test_fuzz_thousand_requests_no_server_error():
    rng0 = random.Random(31)
    seeds = [rng0.randrange(2**32) for _ in range(1000)]
    statuses: list[int] = []
    bad: list[str] = []
    with started_server(budget=4) as url:
        def worker(chunk: list[int]) -> None:
            with httpx.Client(timeout=60) as client:
                for seed in chunk:
                    r = one_request(random.Random(seed), url, client)
                    statuses.append(r.status_code)
                    if r.status_code >= 500 or "Traceback" in r.text:
                        bad.append(f"{seed}: {r.status_code} {r.text[:200]}")
                    elif r.status_code in (400, 408) and r.headers.get(
                            "content-type", "").startswith("application/json"):
                        err = r.json()["error"]
                        if "\n" in err["message"] or not err["field"]:
                            bad.append(f"{seed}: not one line naming a field: {err}")
        with ThreadPoolExecutor(8) as ex:
            list(ex.map(worker, [seeds[i::8] for i in range(8)]))
    assert len(statuses) == 1000
    assert not bad, bad[:5]
    counts = {s: statuses.count(s) for s in sorted(set(statuses))}
    print(f"fuzz: 1000 requests, statuses {counts}")
    assert counts.get(200, 0) > 20 and counts.get(400, 0) > 200


def cheap(sigma: float) -> dict:
    return {"sigma": f"{sigma:.6g}", "sampler": "poisson", "batch_size": 100,
            "dataset_size": 10000, "steps": 100}


def test_fifty_clients_sixty_seconds():
    duration, clients = 60.0, 50
    cached = [cheap(s) for s in (0.8, 1.0, 1.2, 1.5, 2.0)]
    lat: dict[str, list[float]] = {"cached": [], "uncached": [], "expensive": []}
    errors: list[str] = []
    refused = []
    lock = threading.Lock()
    with started_server(budget=20, workers=3) as url:
        with httpx.Client(timeout=60) as c:
            for p in cached:
                assert c.get(url + "/api/v1/epsilon", params=p).status_code == 200
        stop = time.monotonic() + duration

        def client(i: int) -> None:
            rng = random.Random(i)
            kind = "expensive" if i < 6 else "cached" if i < 30 else "uncached"
            with httpx.Client(timeout=90) as c:
                while time.monotonic() < stop:
                    if kind == "cached":
                        path, p = "/api/v1/epsilon", rng.choice(cached)
                    elif kind == "uncached":
                        path, p = "/api/v1/epsilon", cheap(rng.uniform(1, 5))
                    else:  # calibration and the whole page's work, never seen before
                        path = rng.choice(["/api/v1/calibrate", "/api/v1/answer"])
                        p = {"sampler": "shuffle", "relation": "zero-out", "batch_size": 256,
                             "dataset_size": 60000, "epochs": rng.randrange(1, 30),
                             "sigma": f"{rng.uniform(0.7, 3):.6g}",
                             "target_epsilon": f"{rng.uniform(1, 8):.6g}"}
                    t0 = time.monotonic()
                    r = c.get(url + path, params=p)
                    dt = time.monotonic() - t0
                    with lock:
                        if r.status_code == 200:
                            lat[kind].append(dt)
                        elif r.status_code == 408 and kind == "expensive":
                            refused.append(dt)  # stopped at the budget, with the reason
                        else:
                            errors.append(f"{kind} {r.status_code} {r.text[:150]}")

        with ThreadPoolExecutor(clients) as ex:
            list(ex.map(client, range(clients)))
    p95 = {k: float(np.percentile(v, 95)) if v else None for k, v in lat.items()}
    print(f"load: {clients} clients x {duration:g} s; requests "
          f"{ {k: len(v) for k, v in lat.items()} }, refused at budget {len(refused)}; "
          f"p95 latency (s) {p95}")
    assert not errors, errors[:5]
    assert len(lat["cached"]) > 1000 and len(lat["uncached"]) > 20
    assert p95["cached"] < 2.0
    assert p95["uncached"] < 20.0  # cheap work is never stuck behind the heavy burst
