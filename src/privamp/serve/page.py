"""The page: the form (every field with its error slot), the answer (the interval with each
side's source linked to its paper's docs page, the comparison with the Poisson
under-report factor, the curve, calibration, the CLI line, the Python snippet, the shareable
URL).  Everything user-given is HTML-escaped."""

from __future__ import annotations

from html import escape
from importlib import resources
from string import Template
from typing import Any

from .fields import FIELDS, SAMPLERS, Field
from .svg import curve_svg

__all__ = ["render_page", "LABELS", "ANSWER_MARKER", "ANSWER_MARKER_START",
           "ANSWER_MARKER_END"]

#: where the answer goes in a page rendered with ``answer={"marker": True}`` (streaming)
ANSWER_MARKER = "<!--privamp-answer-->"
#: the answer of a rendered page lies between these
ANSWER_MARKER_START, ANSWER_MARKER_END = "<!--answer-start-->", "<!--answer-end-->"

_BY_NAME = {f.name: f for f in FIELDS}

#: the form's label of each field
LABELS = {
    "mechanism": "mechanism", "sigma": "noise multiplier (sigma)", "scale": "Laplace scale",
    "theta": "truth probability (theta)", "batch_size": "batch size",
    "dataset_size": "dataset size", "epochs": "epochs", "steps": "or steps",
    "delta": "delta", "relation": "neighbouring datasets", "source": "choose",
    "sampler": "sampler", "shuffle": "shuffle", "drop_last": "drop_last",
    "torch_sampler": "sampler=", "poisson_sampling": "poisson_sampling",
    "strategy": "strategy", "cycle_length": "cycle_length",
    "target_epsilon": "target epsilon", "points": "points on the curve",
}
_CHOICE_TEXT = {
    "source": {"sampler": "the sampler directly", "pytorch": "what does my loader do? PyTorch",
               "opacus": "what does my loader do? Opacus",
               "jax": "what does my loader do? jax_privacy"},
    "sampler": SAMPLERS,
    "torch_sampler": {"default": "default (RandomSampler / SequentialSampler)",
                      "replacement": "RandomSampler(replacement=True)"},
}


def _value(raw: dict[str, Any], f: Field) -> str:
    v = raw.get(f.name)
    if v is None:
        if f.name in raw or f.default is None or (f.name == "epochs" and raw.get("steps")):
            return ""
        v = f.default
    if isinstance(v, bool):
        return str(v).lower()
    if isinstance(v, float):
        return f"{v:g}"
    return str(v)


def _field(raw: dict[str, Any], error: dict[str, str] | None, name: str) -> str:
    f = _BY_NAME[name]
    value = _value(raw, f)
    bad = error is not None and error.get("field") == name
    msg = escape(error["message"]) if bad and error else ""
    fid = f"f-{name}"
    if f.kind in ("choice", "switch"):
        choices = f.choices if f.kind == "choice" else ("true", "false")
        text = _CHOICE_TEXT.get(name, {})
        opts = "".join(f'<option value="{c}"{" selected" if c == value else ""}>'
                       f"{escape(text.get(c, c))}</option>" for c in choices)
        control = f'<select id="{fid}" name="{name}">{opts}</select>'
    else:
        mode = "numeric" if f.kind == "int" else "decimal"
        control = (f'<input id="{fid}" name="{name}" inputmode="{mode}" '
                   f'value="{escape(value)}" maxlength="40" title="{escape(f.range_text())}">')
    return (f'<div class="field{" invalid" if bad else ""}" id="box-{name}">'
            f'<label for="{fid}">{escape(LABELS[name])}</label>{control}'
            f'<p class="err" id="err-{name}" role="alert">{msg}</p></div>')


def _fields(raw: dict[str, Any], error: dict[str, str] | None, *names: str) -> str:
    return "".join(_field(raw, error, n) for n in names)


def _bound_cell(b: dict[str, Any] | None) -> str:
    return "-" if b is None else f"{b['value']:.4g}"


def _side(label: str, b: dict[str, Any] | None) -> str:
    if b is None:
        return f"<li>{label}: none available for this setting</li>"
    return (f'<li>{label} {b["value"]:.6g}: <a href="/docs/{b["docs"]}">'
            f'{escape(b["source"])}</a></li>')


def _interval(ans: dict[str, Any], delta: float) -> str:
    up, lo = ans["upper"], ans["lower"]
    shown = (f'{_bound_cell(lo)} <span class="sep">&le; &epsilon; &le;</span> '
             f'{_bound_cell(up)}')
    return (f'<div class="card" id="interval"><h2>Certified epsilon at delta = {delta:g}</h2>'
            f'<p class="note">{escape(ans["scheme"])}, {ans["steps"]:,} steps</p>'
            f'<p class="interval" id="interval-value">{shown}</p><ul class="sides">'
            f'{_side("upper bound", up)}{_side("certified lower bound", lo)}</ul></div>')


def _table(rows: list[dict[str, Any]], mine: dict[str, Any], poisson_up: float | None) -> str:
    from .work import under_report_factor

    body = []
    for r in rows:
        cls = ' class="this"' if r.get("this") else ""
        name = escape(SAMPLERS.get(r["sampler"], r["sampler"]))
        if "note" in r:
            body.append(f'<tr{cls}><td>{name}</td><td class="num">-</td><td class="num">-'
                        f'</td><td></td><td class="note">{escape(r["note"])}</td></tr>')
            continue
        lo = r["lower"]["value"] if r.get("lower") else None
        factor = under_report_factor(poisson_up, lo)
        ftext = f'<span class="factor">{factor:.1f}&times;</span>' if factor else ""
        src = (r["upper"] or r["lower"])
        link = f'<a href="/docs/{src["docs"]}">{escape(src["source"][:90])}</a>'
        body.append(f'<tr{cls}><td>{name}</td><td class="num">{_bound_cell(r["lower"])}</td>'
                    f'<td class="num">{_bound_cell(r["upper"])}</td><td class="num">{ftext}'
                    f'</td><td class="note">{link}</td></tr>')
    return ('<div class="card" id="compare"><h2>The same run under every sampler</h2>'
            '<p class="note">Reporting the Poisson epsilon for a run that samples otherwise '
            'under-reports it by at least the factor shown (certified lower bound / Poisson '
            'upper bound).</p><table><thead><tr><th>sampler</th><th class="num">lower</th>'
            '<th class="num">upper</th><th class="num">Poisson under-reports &times;</th>'
            f'<th>source</th></tr></thead><tbody>{"".join(body)}</tbody></table></div>')


def _answer(a: dict[str, Any], delta: float) -> str:
    parts = []
    if a.get("refused"):
        parts.append(f'<div class="card refused" id="refused"><h2>Not computed</h2><p>'
                     f'{escape(a["refused"])}</p></div>')
    if a.get("interval"):
        parts.append(_interval(a["interval"], delta))
    if a.get("calibrate"):
        c = a["calibrate"]
        if "error" in c:
            body = f'<p class="err">{escape(c["error"])}</p>'
        else:
            body = (f'<p class="interval" id="calibrated">sigma = {c["noise_multiplier"]:.5g}'
                    f'</p><p class="note">the smallest noise multiplier found whose epsilon '
                    f'upper bound at delta = {c["delta"]:g} is at most {c["target_epsilon"]:g}'
                    f' ({escape(c["source"])})</p>')
        parts.append(f'<div class="card" id="calibrate"><h2>Calibrate</h2>{body}</div>')
    if a.get("curve"):
        c = a["curve"]
        if "error" in c:
            parts.append(f'<div class="card" id="curve"><h2>Epsilon over training</h2>'
                         f'<p class="note">{escape(c["error"])}</p></div>')
        else:
            svg = curve_svg(c["steps"], c["upper"], c["lower"], "epsilon over training")
            parts.append('<div class="card" id="curve"><h2>Epsilon over training</h2>'
                         f'{svg}<p class="note">solid: upper bound; dashed: certified lower '
                         'bound; shaded: where the true epsilon lies</p></div>')
    if a.get("rows"):
        parts.append(_table(a["rows"], a.get("interval") or {}, a.get("poisson_upper")))
    if a.get("cli"):
        parts.append(f'<div class="card" id="code"><h2>The same in code</h2>'
                     f'<pre id="cli">{escape(a["cli"])}</pre>'
                     f'<pre id="python">{escape(a["python"])}</pre>'
                     f'<p class="share">Shareable link: <input id="share" readonly '
                     f'value="{escape(a["share"])}"> <a id="share-link" '
                     f'href="{escape(a["share"])}">open</a></p></div>')
    if a.get("elapsed") is not None:
        parts.append(f'<p class="note">computed in {a["elapsed"]:.2f} s</p>')
    return "".join(parts)


def render_page(raw: dict[str, Any], *, error: dict[str, str] | None = None,
                answer: dict[str, Any] | None = None, budget: float, version: str) -> str:
    """The whole page.

    Args:
        raw: the inputs as given (to fill the form back in).
        error: ``{"field", "message"}`` of a bad input (shown next to its field).
        answer: what was computed (see :func:`privamp.serve.app`'s ``compute_answer``).
        budget: the time budget per request, in seconds.
        version: privamp's version.

    Returns:
        The HTML text.
    """
    tpl = Template(resources.files(__package__).joinpath("templates/page.html").read_text())
    known = {f.name for f in FIELDS}
    form_error = ""
    if error and error.get("field") not in known:
        form_error = f'<p class="form-error" id="err-form" role="alert">' \
                     f'{escape(error["message"])}</p>'
    delta = answer.get("delta", 1e-5) if answer else 1e-5
    return tpl.substitute(
        form_error=form_error,
        mechanism_fields=_fields(raw, error, "mechanism", "sigma", "scale", "theta"),
        run_fields=_fields(raw, error, "batch_size", "dataset_size", "epochs", "steps",
                           "delta", "relation"),
        source_field=_fields(raw, error, "source"),
        sampler_field=_fields(raw, error, "sampler"),
        torch_fields=_fields(raw, error, "shuffle", "drop_last", "torch_sampler"),
        opacus_fields=_fields(raw, error, "poisson_sampling"),
        jax_fields=_fields(raw, error, "strategy", "cycle_length"),
        calibrate_fields=_fields(raw, error, "target_epsilon", "points"),
        answer=ANSWER_MARKER if answer and answer.get("marker") else
        ANSWER_MARKER_START + (_answer(answer, delta) if answer else "") + ANSWER_MARKER_END,
        budget=f"{budget:g}",
        version=escape(version),
    )
