"""The serve layer without a server: the loader rules (jax_privacy strategies through
``scheme_of_strategy``, Opacus), the parser's one-line errors, the shareable query string,
the SVG plot."""

from __future__ import annotations

import pytest

from privamp.serve.fields import FieldError, parse_query, query_string


@pytest.mark.parametrize("params, scheme", [
    ({"source": "opacus", "poisson_sampling": True}, "Poisson(rate=0.0625)"),  # 1/16 batches
    ({"source": "jax", "strategy": "balls-in-bins", "cycle_length": 16},
     "PersistentBallsInBins(batches=16)"),
    ({"source": "jax", "strategy": "cyclic-poisson"}, "Poisson(rate=0.064)"),
    ({"source": "jax", "strategy": "fixed-batch"},
     "WithoutReplacement(batch_size=64, dataset_size=1000)"),
])
def test_loader_sources(params, scheme):
    from privamp.serve.runs import scheme_for

    q = parse_query({"batch_size": 64, "dataset_size": 1000, "steps": 20, **params})
    assert repr(scheme_for(q)) == scheme



def test_query_string_round_trip():
    q = parse_query({"sigma": "0.9", "sampler": "shuffle", "steps": "120", "delta": "1e-6",
                     "relation": "zero-out", "target_epsilon": "2"})
    again = parse_query(dict(p.split("=") for p in query_string(q).split("&")))
    assert again == q and again.epochs is None and again.steps == 120


@pytest.mark.parametrize("raw", [float("nan"), float("inf"), True, [1], {"a": 1}, "1_0",
                                 "0x10", "1e5000", " ", "1" * 50])
def test_json_values_of_the_wrong_kind(raw):
    params = {"sigma": raw}
    if raw == " ":
        assert parse_query(params).sigma == 1.1  # blank: the default
        return
    with pytest.raises(FieldError) as e:
        parse_query(params)
    assert e.value.field == "sigma" and "[0.1, 1000]" in e.value.message


def test_body_must_be_an_object():
    with pytest.raises(FieldError, match="JSON object"):
        parse_query([("sigma", 1)])


def test_svg_shades_the_interval():
    from privamp.serve.svg import curve_svg

    svg = curve_svg([10, 20, 30], [1.0, 2.0, 3.0], [0.5, None, 2.5], "t<itle")
    assert svg.count("<circle") == 3 and '<polygon class="band"' in svg
    assert "t&lt;itle" in svg
    assert "no upper bound" in curve_svg([1], [None], [None], "x")
