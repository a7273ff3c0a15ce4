"""Check the built docs in headless Chromium, every page at desktop (1280 px) and phone
(390 px) widths: tables inside their column, with rules between rows, striped rows and
padded cells (neighbouring cells do not run together); no word broken mid-identifier
(``DeterministicBatchSa|mpler``); no clipped code block; no sideways scrolling.  Writes a
screenshot of each page at each width.

    python tools/check_layout.py [--page integrations ...] [--width 1280 ...]
                                 [--shots build/screenshots] [--without-extra-css]

Needs ``mkdocs`` (with mkdocstrings) and Debian's ``chromium`` (``apt-get install -y
chromium``).  Prints one line per page and width and exits 1 when something is wrong.
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
# measures, after layout, the main column of a page: tables (inside the column, rules,
# striping, padded cells), words broken mid-identifier, clipped code blocks, sideways scrolling
PROBE = r"""<script>
window.addEventListener('load', () => {
  const main = document.querySelector('[role=main]') || document.body;
  const box = main.getBoundingClientRect();
  const problems = [];
  const say = (m) => { if (problems.length < 40) problems.push(m); };
  const css = (el) => getComputedStyle(el);
  const name = (el) => (el.textContent || '').trim().replace(/\s+/g, ' ').slice(0, 60);
  // tables: inside the column, rules on the cells, striped rows, padded cells
  const tables = [...main.querySelectorAll('table')];
  tables.forEach((t, i) => {
    const r = t.getBoundingClientRect();
    if (r.right > box.right + 1)
      say(`table ${i} ends at ${Math.round(r.right)}px, its column at ${Math.round(box.right)}px`);
    const cell = t.querySelector('tbody td');
    if (!cell) return;
    const s = css(cell);
    const rule = parseFloat(s.borderBottomWidth) + parseFloat(s.borderTopWidth)
      + parseFloat(css(cell.parentElement).borderBottomWidth);
    if (rule === 0)
      say(`table ${i} has no rules between rows`);
    const pad = parseFloat(s.paddingLeft) + parseFloat(s.paddingRight);
    if (pad < 8 && parseFloat(s.borderLeftWidth) === 0)
      say(`table ${i}: neighbouring cells run together (padding ${pad}px, no rule)`);
    const rows = t.querySelectorAll('tbody tr');
    if (rows.length >= 3 && css(rows[0]).backgroundColor === css(rows[1]).backgroundColor)
      say(`table ${i} has no striping`);
  });
  // words broken mid-identifier (DeterministicBatchSa|mpler): a line break between two word
  // characters (UAX 14 breaks after punctuation such as an en dash or an ellipsis are fine)
  const walker = document.createTreeWalker(main, NodeFilter.SHOW_TEXT);
  const range = document.createRange();
  let node;
  while ((node = walker.nextNode())) {
    const text = node.textContent;
    if (text.trim().length < 2 || node.parentElement.closest('pre')) continue;
    let lastTop = null;
    for (let k = 0; k < text.length; k++) {
      range.setStart(node, k); range.setEnd(node, k + 1);
      const rs = range.getClientRects();
      if (!rs.length) continue;
      const top = Math.round(rs[0].top);
      // a break inside an identifier: letters, digits or underscores on both sides
      if (lastTop !== null && top > lastTop + 2 && /\w/.test(text[k]) && /\w/.test(text[k - 1]))
        say(`"${text.slice(Math.max(0, k - 20), k)}|${text.slice(k, k + 20)}" broken mid-word`);
      lastTop = top;
    }
  }
  // code blocks: a line wider than its box must scroll, not be clipped
  main.querySelectorAll('pre').forEach((p, i) => {
    const ox = css(p).overflowX;
    if (p.scrollWidth > p.clientWidth + 1 && !['auto', 'scroll'].includes(ox))
      say(`code block ${i} ("${name(p).slice(0, 30)}") is clipped (overflow-x ${ox})`);
    const r = p.getBoundingClientRect();
    if (r.right > box.right + 1) say(`code block ${i} sticks out of the column`);
  });
  const scrolls = (e) => {  // inside a box that scrolls sideways by itself
    for (; e && e !== document.body; e = e.parentElement)
      if (['auto', 'scroll'].includes(css(e).overflowX)) return true;
    return false;
  };
  const page = document.documentElement.scrollWidth > window.innerWidth + 1;
  if (page) {
    const wide = [...document.body.querySelectorAll('*')].filter(
      (e) => e.getBoundingClientRect().right > window.innerWidth + 1
        && !scrolls(e.parentElement));
    const tag = (e) => e.tagName.toLowerCase();
    const first = wide.slice(-3).map(
      (e) => `${tag(e.parentElement)}>${tag(e)} "${name(e).slice(0, 30)}"`);
    say(`the page scrolls sideways (${first.join(', ')})`);
  }
  const out = document.createElement('pre');
  out.id = 'layout-result';
  out.textContent = JSON.stringify({tables: tables.length, problems, width: window.innerWidth});
  document.body.appendChild(out);
  if (window.parent !== window) window.parent.postMessage(out.textContent, '*');
});
</script>"""


#: the narrowest headless Chromium window
MIN_WINDOW = 500
# a page at a phone's width: an iframe that wide, its probe's result copied out
PHONE = """<!doctype html><html><body style="margin:0">
<iframe id="f" src="{src}" style="border:0;width:{width}px;height:1000px"></iframe>
<script>
window.addEventListener('message', (e) => {{
  const out = document.createElement('pre');
  out.id = 'layout-result';
  out.textContent = e.data;
  document.body.appendChild(out);
}});
</script></body></html>"""


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
    target = probed
    window = width
    if width < MIN_WINDOW:
        # headless windows are at least 500 px wide: a phone width is an iframe of that width
        target = html.with_name(f"phone-{width}.html")
        target.write_text(PHONE.format(width=width, src=probed.name))
        window = MIN_WINDOW
    # (local files in a throwaway profile: the iframe of a phone width may message its page)
    base = [exe, *CHROMIUM_FLAGS, "--allow-file-access-from-files", "--disable-web-security",
            f"--user-data-dir={profile}", f"--window-size={window},1000"]
    probed = target
    dom = subprocess.run([*base, "--dump-dom", probed.as_uri()], capture_output=True,
                         text=True, timeout=120, check=True).stdout
    found = re.search(r'<pre id="layout-result">(.*?)</pre>', dom, re.S)
    if found is None:
        raise RuntimeError("the layout probe did not run")
    if screenshot is not None:
        subprocess.run([*base, f"--screenshot={screenshot}", probed.as_uri()],
                       capture_output=True, timeout=120, check=True)
    return json.loads(found.group(1).replace("&quot;", '"'))


#: the widths checked by default: a desktop and a phone
WIDTHS = (1280, 390)


def pages(site: Path) -> list[str]:
    """The pages of a built site (folder names; "" is the home page)."""
    out = []
    for html in sorted(site.rglob("index.html")):
        rel = html.parent.relative_to(site).as_posix()
        if rel != "." and (rel.startswith("search") or rel.startswith("assets")):
            continue
        out.append("" if rel == "." else rel)
    return out


def check(page: str | list[str] | None = "integrations", widths: tuple[int, ...] = WIDTHS,
          out: Path | None = None, extra_css: bool = True) -> list[str]:
    """Problems found on ``page`` (a page, a list, or None: every page) at each width (empty
    when the layout is fine); screenshots go to ``out``'s folder, named
    ``<out stem>-<page>-<width>.png`` (or ``<out stem>-<width>.png`` for one page)."""
    problems = []
    with tempfile.TemporaryDirectory() as tmp:
        site = build_site(Path(tmp) / "site", extra_css)
        names = pages(site) if page is None else [page] if isinstance(page, str) else page
        for name in names:
            html = site / name / "index.html"
            label = name or "home"
            for width in widths:
                shot = None
                if out is not None:
                    tag = f"-{label.replace('/', '_')}" if len(names) > 1 else ""
                    shot = out.with_name(f"{out.stem}{tag}-{width}{out.suffix or '.png'}")
                res = measure(html, width, shot, Path(tmp) / f"profile-{width}")
                problems += [f"{label} at {width}px: {p}" for p in res["problems"]]
                print(f"{label} at {width}px: {res['tables']} tables, {len(res['problems'])} "
                      "problems" + (f"; screenshot {shot}" if shot else ""))
    return problems


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--page", action="append", help="page(s) of the site (default: all)")
    p.add_argument("--width", type=int, action="append", help="window width(s) in px "
                   "(default 1280 and 390)")
    p.add_argument("--shots", type=Path, help="folder for the screenshots (one per page and "
                   "width)")
    p.add_argument("--without-extra-css", action="store_true", help="drop docs/css/extra.css")
    a = p.parse_args(argv)
    out = None
    if a.shots is not None:
        a.shots.mkdir(parents=True, exist_ok=True)
        out = a.shots / "docs.png"
    problems = check(a.page, tuple(a.width or WIDTHS), out, not a.without_extra_css)
    for line in problems:
        print(line)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
