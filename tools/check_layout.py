"""Check a page of the built docs in headless Chromium: no table overflows its column and the
page does not scroll sideways.  Also writes a screenshot.

    python tools/check_layout.py [--page integrations] [--width 1280] [--out shot.png]
                                 [--without-extra-css]

Needs ``mkdocs`` (with mkdocstrings) and Debian's ``chromium`` (``apt-get install -y
chromium``).  Prints one line per width and exits 1 when something overflows.
``--without-extra-css`` drops docs/css/extra.css, to show what the check catches.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM_FLAGS = (
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
    "--no-first-run", "--disable-component-update", "--disable-sync",
    "--hide-scrollbars", "--virtual-time-budget=5000",
)
# measures, after layout, every table of the main column against that column
PROBE = """<script>
window.addEventListener('load', () => {
  const main = document.querySelector('[role=main]') || document.body;
  const box = main.getBoundingClientRect();
  const tables = [...main.querySelectorAll('table')].map((t, i) => {
    const r = t.getBoundingClientRect();
    return {index: i, right: r.right, limit: box.right, overflows: r.right > box.right + 1};
  });
  const page = document.documentElement.scrollWidth > window.innerWidth + 1;
  const out = document.createElement('pre');
  out.id = 'layout-result';
  out.textContent = JSON.stringify({tables, page, width: window.innerWidth});
  document.body.appendChild(out);
});
</script>"""


def chromium() -> str | None:
    """The chromium executable, or None."""
    return shutil.which("chromium") or shutil.which("chromium-browser")


def build_site(dest: Path, extra_css: bool = True) -> Path:
    """``mkdocs build --strict`` of this checkout into ``dest`` (optionally without the
    extra stylesheet)."""
    config = ROOT / "mkdocs.yml"
    if not extra_css:
        text = re.sub(r"extra_css:\n(  - .*\n)+", "", config.read_text())
        text = text.replace("docs_dir: docs", f"docs_dir: {ROOT / 'docs'}")
        text = text.replace("paths: [src]", f"paths: [{ROOT / 'src'}]")
        config = dest.parent / "mkdocs-no-extra-css.yml"
        config.write_text(text)
    subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-q", "-f",
                    str(config), "-d", str(dest)], cwd=ROOT, check=True, timeout=300)
    return dest


def measure(html: Path, width: int, screenshot: Path | None, profile: Path) -> dict:
    """Load ``html`` (with the probe injected) at ``width`` px; the probe's findings."""
    probed = html.with_name("probed.html")
    text = html.read_text()
    probed.write_text(text.replace("</body>", PROBE + "</body>"))
    exe = chromium()
    if exe is None:
        raise RuntimeError("chromium not found: apt-get install -y chromium")
    base = [exe, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", f"--window-size={width},1000"]
    dom = subprocess.run([*base, "--dump-dom", probed.as_uri()], capture_output=True,
                         text=True, timeout=120, check=True).stdout
    found = re.search(r'<pre id="layout-result">(.*?)</pre>', dom, re.S)
    if found is None:
        raise RuntimeError("the layout probe did not run")
    if screenshot is not None:
        subprocess.run([*base, f"--screenshot={screenshot}", probed.as_uri()],
                       capture_output=True, timeout=120, check=True)
    return json.loads(found.group(1).replace("&quot;", '"'))


def check(page: str = "integrations", widths: tuple[int, ...] = (1280, 1000),
          out: Path | None = None, extra_css: bool = True) -> list[str]:
    """Problems found on ``page`` at each width (empty when the layout is fine)."""
    problems = []
    with tempfile.TemporaryDirectory() as tmp:
        site = build_site(Path(tmp) / "site", extra_css)
        html = site / page / "index.html"
        for width in widths:
            shot = None if out is None else out.with_name(f"{out.stem}-{width}{out.suffix}")
            res = measure(html, width, shot, Path(tmp) / f"profile-{width}")
            bad = [t for t in res["tables"] if t["overflows"]]
            for t in bad:
                problems.append(f"{page} at {width}px: table {t['index']} ends at "
                                f"{t['right']:.0f}px, its column at {t['limit']:.0f}px")
            if res["page"]:
                problems.append(f"{page} at {width}px: the page scrolls sideways")
            print(f"{page} at {width}px: {len(res['tables'])} tables, "
                  f"{len(bad)} overflowing{', page scrolls sideways' if res['page'] else ''}"
                  + (f"; screenshot {shot}" if shot else ""))
    return problems


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--page", default="integrations", help="page of the site (default: "
                   "integrations)")
    p.add_argument("--width", type=int, action="append", help="window width(s) in px")
    p.add_argument("--out", type=Path, help="screenshot file (one per width)")
    p.add_argument("--without-extra-css", action="store_true", help="drop docs/css/extra.css")
    a = p.parse_args(argv)
    problems = check(a.page, tuple(a.width or (1280, 1000)), a.out, not a.without_extra_css)
    for line in problems:
        print(line)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
