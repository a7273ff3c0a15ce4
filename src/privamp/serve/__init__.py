"""``privamp serve``: a local web page (and a JSON API under it) answering how private a DP
training run is, for the sampler its loader really uses (issue 31).

Needs the ``serve`` extra (``pip install "privamp[serve]"``: Starlette and uvicorn);
``import privamp`` does not import it.  Modules: ``fields`` (the inputs and their ranges),
``runs`` (inputs to privamp objects, loader rules, CLI line and snippet), ``work`` (the work,
run in worker processes), ``workers`` (the pool), ``svg`` (the plot), ``page`` (the HTML),
``openapi`` (the schema), ``app`` (the ASGI application).
"""

from __future__ import annotations

from .app import ServeConfig, create_app

__all__ = ["ServeConfig", "create_app"]
