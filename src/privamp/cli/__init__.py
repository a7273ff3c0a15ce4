"""The ``privamp`` command line.

    privamp epsilon --sigma 1.1 --scheme poisson --rate 0.0042667 --steps 14063 --delta 1e-5
    privamp epsilon --sigma 1.1 --scheme shuffle --batch-size 256 --dataset-size 60000 \
                    --epochs 60 --delta 1e-5 [--drop-last] [--persistent]
    privamp delta   --sigma 0.8 --scheme shuffle --batch-size 60 --dataset-size 60000 \
                    --epochs 1 --epsilon 1
    privamp compare --sigma 0.5 --steps 10000 --delta 1e-6
    privamp calibrate --epsilon 3 --delta 1e-5 --scheme poisson --rate 0.01 --steps 10000
    privamp rdp     --sigma 1.0 --scheme poisson --rate 0.01 --alpha 2 4 8 [--method NAME]
    privamp reproduce PAPER [--figure N] [--out DIR]
    privamp support     # which results and accountants apply where (markdown)
    privamp demo
    privamp serve [--host 127.0.0.1] [--port 8000] [--budget 20]   # the web page

The ``--scheme`` choices and their flags come from the scheme registry
(:mod:`privamp.sampling.registry`).  Bad input, and a run no accountant covers, print one line
``privamp: error: ...`` and exit with status 2.

Modules: ``flags`` (the parser's flags), ``values`` (mechanism, scheme, run from the flags),
``output`` (printing), ``commands`` (one function per command), ``demo``, ``serve``, ``main``.
"""

from __future__ import annotations

from .main import build_parser, main

__all__ = [
    "main",
    "build_parser",
]
