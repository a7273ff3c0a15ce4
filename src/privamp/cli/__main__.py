"""``python -m privamp.cli ...``: the ``privamp`` command."""

from __future__ import annotations

from .main import main

if __name__ == "__main__":
    raise SystemExit(main())
