"""The ``privamp serve`` process the serve tests talk to: :func:`started_server` runs
``python -m privamp.cli serve`` on a free port of 127.0.0.1 and stops it afterwards (the other
``test_serve*`` files import it).  The tests here: the CLI's host warning and refusals."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("starlette")
pytest.importorskip("uvicorn")
httpx = pytest.importorskip("httpx")

SRC = Path(__file__).resolve().parents[2] / "src"


def free_port() -> int:
    """A port of 127.0.0.1 nobody listens on (now)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def started_server(budget: float = 20, workers: int = 3, timeout: float = 120) -> Iterator[str]:
    """Run ``privamp serve`` on 127.0.0.1 and yield its base URL; stop it on exit."""
    port = free_port()
    env = {**os.environ, "PYTHONPATH": f"{SRC}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "privamp.cli", "serve", "--port", str(port), "--budget",
         str(budget), "--workers", str(workers)],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    url = f"http://127.0.0.1:{port}"
    try:
        t0 = time.monotonic()
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"privamp serve exited: {proc.stderr.read().decode()}")
            try:
                if httpx.get(url + "/api/openapi.json", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if time.monotonic() - t0 > timeout:
                raise RuntimeError("privamp serve did not start in time")
            time.sleep(0.3)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        proc.stderr.close()


def test_other_host_prints_a_warning(monkeypatch, capsys):
    import uvicorn

    from privamp.cli import main

    calls = []
    monkeypatch.setattr(uvicorn, "run", lambda app, **kw: calls.append(kw))
    assert main(["serve", "--host", "0.0.0.0", "--port", "8123"]) == 0
    err = capsys.readouterr().err
    assert "warning: binding 0.0.0.0" in err
    assert calls[0]["host"] == "0.0.0.0" and calls[0]["port"] == 8123
    assert main(["serve"]) == 0
    assert "warning" not in capsys.readouterr().err
    assert calls[1]["host"] == "127.0.0.1"


@pytest.mark.parametrize("argv, what", [
    (["serve", "--budget", "0"], "--budget"),
    (["serve", "--budget", "nan"], "--budget"),
    (["serve", "--workers", "1"], "--workers"),
    (["serve", "--port", "70000"], "--port"),
])
def test_bad_flags_one_line(argv, what, monkeypatch, capsys):
    import uvicorn

    from privamp.cli import main

    monkeypatch.setattr(uvicorn, "run", lambda app, **kw: None)
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and what in err and "error" in err
