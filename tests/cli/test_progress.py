"""privamp.progress: a bar on a terminal, whole lines elsewhere, silent on request."""

from __future__ import annotations

import io
import time

from privamp.progress import iterate, progress, working


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_off_a_terminal_each_update_is_one_line():
    out = io.StringIO()
    assert list(iterate(range(3), "probing", stream=out)) == [0, 1, 2]
    lines = out.getvalue().splitlines()
    assert "\r" not in out.getvalue() and lines[-1].startswith("probing: 100%")
    assert any("2/3" in line for line in lines)


def test_on_a_terminal_the_bar_redraws_in_place():
    out = _Tty()
    bar = progress(total=2, desc="x", stream=out)
    bar.update(2)
    bar.close()
    assert "\r" in out.getvalue()


def test_working_shows_elapsed_time_only_for_slow_work():
    out = io.StringIO()
    assert working("quick", lambda: 1, stream=out, after=5.0) == 1 and out.getvalue() == ""
    assert working("slow", lambda: time.sleep(0.3) or 2, stream=out, after=0.05) == 2
    assert out.getvalue().startswith("slow: 00:00")


def test_silenced_by_the_environment(monkeypatch):
    monkeypatch.setenv("PRIVAMP_PROGRESS", "0")
    out = io.StringIO()
    list(iterate(range(3), "quiet", stream=out))
    assert working("quiet", lambda: time.sleep(0.2), stream=out, after=0.01) is None
    assert out.getvalue() == ""


def test_off_a_terminal_the_closing_refresh_is_not_repeated():
    out = io.StringIO()
    bar = progress(total=None, desc="calibrating", stream=out, log_every=0.0, unit=" probes")
    for sigma in (1.5, 1.7):
        bar.set_postfix_str(f"sigma={sigma}", refresh=False)
        bar.update()
    bar.close()
    lines = out.getvalue().splitlines()
    # the empty start, one line per probe; close() adds no copy of the last probe's line
    assert [line.split("]")[0].split(" [")[0] for line in lines] == [
        "calibrating: 0 probes", "calibrating: 1 probes", "calibrating: 2 probes"]
    assert lines[-1].endswith("sigma=1.7]")


def test_silenced_by_tqdm_disable(monkeypatch):
    """Issue 33: tqdm's own TQDM_DISABLE=1 silences the bars and the elapsed-time line."""
    monkeypatch.delenv("PRIVAMP_PROGRESS", raising=False)
    monkeypatch.setenv("TQDM_DISABLE", "1")
    out = io.StringIO()
    list(iterate(range(3), "quiet", stream=out))
    working("quiet", lambda: time.sleep(0.2), stream=out, after=0.01)
    assert out.getvalue() == ""
    monkeypatch.setenv("TQDM_DISABLE", "0")
    list(iterate(range(3), "loud", stream=out))
    assert "loud" in out.getvalue()


def test_lines_go_through_logging_when_it_is_configured(caplog, monkeypatch, capsys):
    """Issue 33: off a terminal, with logging configured at INFO, progress lines are records
    of the "privamp" logger, not stray stderr text."""
    import logging

    monkeypatch.delenv("PRIVAMP_PROGRESS", raising=False)
    monkeypatch.delenv("TQDM_DISABLE", raising=False)
    with caplog.at_level(logging.INFO, logger="privamp"):
        list(iterate(range(2), "logged"))
    assert any(r.name == "privamp" and "logged" in r.getMessage() for r in caplog.records)
    assert "logged" not in capsys.readouterr().err
