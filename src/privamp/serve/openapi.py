"""The OpenAPI 3.1 schema of the JSON API, generated from the field table
(:data:`privamp.serve.fields.FIELDS`) so that it cannot drift from the parser."""

from __future__ import annotations

from typing import Any

from .fields import FIELDS, Field

__all__ = ["ENDPOINTS", "openapi_schema"]

#: endpoint -> (the answer's parts, what it returns)
ENDPOINTS: dict[str, tuple[tuple[str, ...], str]] = {
    "epsilon": (("interval",), "the certified interval of the run (upper and lower bound, "
                               "each with its source and docs page)"),
    "compare": (("interval", "rows"), "the interval and the same run under every other "
                                      "sampler"),
    "curve": (("curve",), "epsilon (both sides) over training, at `points` steps"),
    "calibrate": (("calibrate",), "the smallest noise multiplier meeting target_epsilon"),
    "answer": (("interval", "rows", "curve", "calibrate"), "everything the page shows"),
}


def _schema(f: Field) -> dict[str, Any]:
    if f.kind == "choice":
        out: dict[str, Any] = {"type": "string", "enum": list(f.choices)}
    elif f.kind == "switch":
        out = {"type": "boolean"}
    else:
        out = {"type": "integer" if f.kind == "int" else "number", "maximum": f.high}
        out["exclusiveMinimum" if f.open_low else "minimum"] = f.low
    if f.default is not None:
        out["default"] = f.default
    out["description"] = f"{f.help} ({f.range_text()})"
    return out


_ERROR = {"type": "object", "properties": {"error": {
    "type": "object", "properties": {"field": {"type": "string"},
                                     "message": {"type": "string"}}}}}


def openapi_schema(version: str) -> dict[str, Any]:
    """The OpenAPI document of the API (``GET`` with the fields as query parameters, or
    ``POST`` with them as a JSON object)."""
    params = [{"name": f.name, "in": "query", "required": False, "schema": _schema(f)}
              for f in FIELDS]
    body = {"content": {"application/json": {"schema": {
        "type": "object", "additionalProperties": False,
        "properties": {f.name: _schema(f) for f in FIELDS}}}}}
    responses = {
        "200": {"description": "the answer (numbers are Bounds: value, kind, source, docs)",
                "content": {"application/json": {"schema": {"type": "object"}}}},
        "400": {"description": "a bad field: one line naming it and its valid range",
                "content": {"application/json": {"schema": _ERROR}}},
        "408": {"description": "the work ran past the time budget and was stopped",
                "content": {"application/json": {"schema": _ERROR}}},
        "413": {"description": "the body is too large"},
        "414": {"description": "the query string is too long"},
        "503": {"description": "too many requests waiting; retry later"},
    }
    paths = {}
    for name, (_, text) in ENDPOINTS.items():
        paths[f"/api/v1/{name}"] = {
            "get": {"summary": text, "operationId": f"get_{name}", "parameters": params,
                    "responses": responses},
            "post": {"summary": text, "operationId": f"post_{name}", "requestBody": body,
                     "responses": responses},
        }
    return {"openapi": "3.1.0",
            "info": {"title": "privamp serve", "version": version,
                     "description": "Certified privacy accounting of a DP training run."},
            "paths": paths}
