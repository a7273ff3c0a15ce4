"""``privamp serve``: the privacy calculator as a local web page (:mod:`privamp.serve`).

    privamp serve [--host 127.0.0.1] [--port 8000] [--budget 20] [--workers 3]

Binds 127.0.0.1 by default; any other host (``--host 0.0.0.0``) prints a warning first.
Needs the ``serve`` extra (``pip install "privamp[serve]"``).
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from .flags import command, count
from .values import CliError

__all__ = ["add_serve_command", "cmd_serve", "LOCAL_HOSTS"]

#: hosts that only this machine can reach
LOCAL_HOSTS = ("127.0.0.1", "localhost", "::1")


def _seconds(text: str) -> float:
    try:
        x = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected seconds in (0, 3600], got {text!r}") \
            from None
    if not 0 < x <= 3600:
        raise argparse.ArgumentTypeError(f"expected seconds in (0, 3600], got {text!r}")
    return x


def add_serve_command(sub: Any) -> None:
    """Register ``privamp serve`` on the parser's subcommands."""
    p = command(sub, "serve", "the privacy calculator as a local web page (and a JSON API)",
                "privamp serve --port 8000   # then open http://127.0.0.1:8000", cmd_serve)
    p.add_argument("--host", default="127.0.0.1",
                   help="address to bind (default 127.0.0.1: this machine only)")
    p.add_argument("--port", type=count, default=8000, help="port (default 8000)")
    p.add_argument("--budget", type=_seconds, default=20.0,
                   help="seconds a request may compute before it is stopped (default 20)")
    p.add_argument("--workers", type=count, default=3,
                   help="worker processes (>= 2; default 3)")
    p.add_argument("--memory", type=count, default=3072,
                   help="memory budget of each worker in MiB (default 3072)")


def cmd_serve(args: argparse.Namespace) -> None:
    """``privamp serve``: run the page with uvicorn until interrupted.

    Raises:
        CliError: the serve extra is not installed, or fewer than 2 workers.
    """
    try:
        import uvicorn

        from ..serve import ServeConfig, create_app
    except ImportError as exc:
        raise CliError(f"privamp serve needs the serve extra: pip install \"privamp[serve]\" "
                       f"({exc})") from None
    if args.workers < 2:
        raise CliError("--workers must be >= 2 (one worker is kept for light requests)")
    if args.port > 65535:
        raise CliError(f"--port must be in [1, 65535], got {args.port}")
    if args.host not in LOCAL_HOSTS:
        print(f"privamp serve: warning: binding {args.host}: anyone who can reach this "
              "machine on that address can use the calculator (and its CPU); the default "
              "127.0.0.1 serves this machine only", file=sys.stderr)
    app = create_app(ServeConfig(budget=args.budget, workers=args.workers,
                                 memory_mb=args.memory))
    print(f"privamp serve: http://{args.host}:{args.port}/ (budget {args.budget:g} s per "
          "request; Ctrl-C stops)", file=sys.stderr)
    uvicorn.run(app, host=args.host, port=args.port, log_level="warning",
                limit_concurrency=256, timeout_keep_alive=5, h11_max_incomplete_event_size=16384)
