"""The committed notebooks as a reader sees them: each converted to HTML (`jupyter nbconvert --to html`) and
screenshotted at 1400 px wide by a headless Chromium into build/notebook-screenshots/ (git-ignored). Fails on what a
reader should never see:

- an error output, a stderr stream (a red band), an NBVAL marker (test plumbing belongs in cell tags), a NaN in a table;
- a table wider than the page: laid out by Chromium at the width a reader has (JupyterLab 4.6 in a 1400 px window
  with its file browser open gives an output area of about 890 px; nbconvert's page at LAYOUT_WIDTH px gives the
  same), a table whose right edge is past its output area's visible edge (a reader would scroll sideways);
- a figure whose smallest text renders under MIN_FONT_PX at the width it is shown: report.save_figure records each
  figure's smallest font (points) and dpi in its PNG (tEXt chunks), and the text's height on screen is
  pt * dpi / 72 * min(1, shown width / PNG width), with the shown width measured in the page (the notebook) or
  README_WIDTH (GitHub's README column) for the figures README.md and docs/*.md embed;
- a pointer to a section that does not exist: README.md or docs/X.md followed by a quoted section name ("README,
  'Install'", 'docs/sizing.md, "The small profile: how it was sized"') that is none of that file's headings;
- an internal word in reader-facing text (markdown cells and rendered outputs, code spans aside): "issue",
  "session" or "stop" and a number, "the issue's", "lane", "campaign";
- a code line wider than the editor, or a printed line wider than the output area (JupyterLab wraps it at the edge,
  mid-word: its output `pre` breaks anywhere): more than TEXT_CHARS characters;
- a unit after "n=k" ("23.4 (9.3) n=3 %": the unit belongs to the number, "23.4 (9.3) % n=3").

    python tests/browser_check.py [NAME ...]      # every notebook, or the named ones; `make check-notebooks`
"""
from __future__ import annotations

import base64
import html as html_lib
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import zlib
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
NB_DIR = REPO / "notebooks"
OUT = REPO / "build" / "notebook-screenshots"
WIDTH = 1400            # the screenshots' window width
# The window width at which nbconvert's page gives an output area as wide as JupyterLab 4.6's in a 1400 px window
# with its file browser open (about 890 px: the activity bars, the file browser and the prompts take the rest);
# the tables and the notebook figures are measured at it.
LAYOUT_WIDTH = 1000
README_WIDTH = 890      # GitHub's README column: a wider image is shrunk to it
MIN_FONT_PX = 13        # JupyterLab's body text is 13-14 px, GitHub's README 16 px
# JupyterLab 4.6 draws code and printed output in 13 px monospace, 7.83 px a character. Measured in a 1400 px window
# with the file browser at its default width: the editor 966 px wide, the output area 968 px (123 characters). The
# lines are held to the 890 px this file assumes for the output area (tables, figures): 113 characters.
TEXT_CHARS = int(890 / 7.83)
UNIT_AFTER_N = re.compile(r"\bn=\d+\)?\s*(%|points?\b|pp\b)")
FONT_KEY, DPI_KEY = "semifl:font-min-pt", "semifl:dpi"   # written by semifl_core.report.figures.save_figure
NAN_CELL = re.compile(r"<t[dh][^>]*>\s*(NaN|nan|<NA>)\s*</t[dh]>")
# a pointer to a section: README (or README.md, or docs/X.md), then within a few words its quoted heading
POINTER = re.compile(r"\b(README(?:\.md)?|docs/[\w.-]+\.md)\b[^\"'“‘\n.;)]{0,30}?(?:section\s+)?"
                     r"(?:\"([^\"\n]{3,120})\"|“([^”\n]{3,120})”|‘([^’\n]{3,120})’"
                     r"|'([^'\n]{3,120}?)'(?=[\s,.;:)]|$))")
# our tracker's and working sessions' numbers: a reader can open neither (README.md and docs/ are held to these too)
NUMBERED = [(re.compile(r"\bissues?\s*#?\s*\d+", re.I), "an issue number"),
            (re.compile(r"\bsessions?\s+\d+\b", re.I), "a session number"),
            (re.compile(r"\bstops?\s+\d+\b", re.I), "a stop number")]
INTERNAL = [*NUMBERED,
            (re.compile(r"\bthe issue['’]s\b", re.I), "\"the issue's\""),
            (re.compile(r"\blanes?\b", re.I), "\"lane\""),
            (re.compile(r"\bcampaigns?\b", re.I), "\"campaign\"")]


def chromium() -> str | None:
    """The headless browser: $CHROMIUM, else Debian's chromium (or chrome) on PATH; None when there is none."""
    for name in (os.environ.get("CHROMIUM"), "chromium", "chromium-browser", "google-chrome"):
        if name and shutil.which(name):
            return shutil.which(name)
    return None


# ---------------------------------------------------------------------------------------------------------------
# what the notebook's JSON and HTML show (no browser needed)

def problems(nb: dict, html: str) -> list[str]:
    """What a reader should not see in one notebook (its JSON and its HTML), the layout aside."""
    found = []
    for i, cell in enumerate(nb["cells"]):
        if cell["cell_type"] != "code":
            continue
        if re.search(r"^\s*#\s*NBVAL_", "".join(cell["source"]), re.M):
            found.append(f"cell {i}: an NBVAL marker in its source (use the cell tag)")
        for out in cell.get("outputs", []):
            if out["output_type"] == "error":
                found.append(f"cell {i}: an error output ({out.get('ename')})")
            elif out["output_type"] == "stream" and out["name"] == "stderr":
                found.append(f"cell {i}: a stderr output (a red band): {''.join(out['text'])[:80]!r}")
    if NAN_CELL.search(html):
        found.append(f"a NaN in a table: {NAN_CELL.search(html).group(0)[:80]!r}")
    if "NBVAL_" in re.sub(r"<script.*?</script>", "", html, flags=re.S):
        found.append("an NBVAL marker in the page")
    return found + pointer_problems(nb) + word_problems(nb) + width_problems(nb) + unit_problems(nb)


def _text(value) -> str:
    return "".join(value) if isinstance(value, list) else str(value)


def reader_texts(nb: dict, code: bool = False):
    """(cell index, text) of what a reader reads: markdown cells, and the markdown, HTML and plain-text outputs
    (HTML as its text); code=True adds the code cells' sources (their comments are read too)."""
    for i, cell in enumerate(nb["cells"]):
        if cell["cell_type"] == "markdown":
            yield i, _text(cell["source"])
        elif cell["cell_type"] == "code":
            if code:
                yield i, _text(cell["source"])
            for out in cell.get("outputs", []):
                data = out.get("data", {})
                if "text/markdown" in data:
                    yield i, _text(data["text/markdown"])
                elif "text/html" in data:
                    yield i, html_lib.unescape(re.sub(r"<[^>]+>", " ", _text(data["text/html"])))
                elif out.get("output_type") == "stream" and out.get("name") == "stdout":
                    yield i, _text(out.get("text", ""))


def _heading_key(text: str) -> str:
    """A heading or a quoted section name, compared: markdown emphasis, code marks and links out, case and spacing
    folded, trailing punctuation dropped."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)
    text = re.sub(r"[*_`]", "", text)
    return re.sub(r"\s+", " ", text).strip().rstrip(".:").casefold()


def headings(path: Path) -> set[str]:
    """The markdown headings of a file (# lines outside code blocks, and <hN> tags), as _heading_key gives them."""
    out, fenced = set(), False
    for line in path.read_text().splitlines():
        if line.lstrip().startswith("```"):
            fenced = not fenced
        elif not fenced and re.match(r"^#{1,6}\s", line):
            out.add(_heading_key(line.lstrip("#")))
    out |= {_heading_key(re.sub(r"<[^>]+>", "", h))
            for h in re.findall(r"<h[1-6][^>]*>(.*?)</h[1-6]>", path.read_text(), re.S)}
    return out


def pointer_problems(nb: dict, repo: Path = REPO) -> list[str]:
    """Each pointer to README.md's or a docs/*.md file's section by a quoted name that is not one of its headings
    (or to a file that does not exist)."""
    found, cache = [], {}
    for i, text in reader_texts(nb, code=True):
        for m in POINTER.finditer(text):
            name = m.group(1) if m.group(1).endswith(".md") else "README.md"
            path = repo / name
            if name not in cache:
                cache[name] = headings(path) if path.exists() else None
            if cache[name] is None:
                found.append(f"cell {i}: a pointer to {name}, which does not exist")
            elif _heading_key(next(g for g in m.groups()[1:] if g)) not in cache[name]:
                section = next(g for g in m.groups()[1:] if g)
                found.append(f"cell {i}: a pointer to {name}'s section {section!r}, which is none of its headings")
    return found


def _prose(text: str) -> str:
    """Markdown without its code (fenced blocks and `spans`): a command or a module's name is not a word."""
    return re.sub(r"`[^`\n]*`", " ", re.sub(r"```.*?```", " ", text, flags=re.S))


def word_problems(nb: dict) -> list[str]:
    """An internal word in what a reader reads (markdown cells, rendered outputs; code aside)."""
    found = []
    for i, text in reader_texts(nb):
        for pattern, what in INTERNAL:
            m = pattern.search(_prose(text))
            if m:
                found.append(f"cell {i}: an internal word, {what}: {m.group(0)!r}")
    return found


def width_problems(nb: dict, limit: int = TEXT_CHARS) -> list[str]:
    """Each code line a reader scrolls sideways to read, and each printed line (stdout, plain-text results) that
    JupyterLab wraps mid-word: longer than `limit` characters."""
    found = []
    for i, cell in enumerate(nb["cells"]):
        if cell["cell_type"] != "code":
            continue
        for line in _text(cell["source"]).split("\n"):
            if len(line) > limit:
                found.append(f"cell {i}: a code line of {len(line)} characters, wider than the editor ({limit}): "
                             f"{line[:60]!r}...")
        for out in cell.get("outputs", []):
            data = out.get("data", {})
            if out.get("output_type") == "stream" and out.get("name") == "stdout":
                text = _text(out.get("text", ""))
            elif "text/plain" in data and not any(k in data for k in ("text/html", "text/markdown", "image/png")):
                text = _text(data["text/plain"])
            else:
                continue
            for line in text.split("\n"):
                if len(line) > limit:
                    found.append(f"cell {i}: a printed line of {len(line)} characters, which JupyterLab wraps "
                                 f"mid-word (at most {limit}: print a table, or report.say): {line[:60]!r}...")
    return found


def unit_problems(nb: dict) -> list[str]:
    """A unit written after a cell's n ("23.4 (9.3) n=3 %") in what a reader reads."""
    found = []
    for i, text in reader_texts(nb):
        m = UNIT_AFTER_N.search(text)
        if m:
            found.append(f"cell {i}: a unit after n: {m.group(0)!r} (write 'mean (std) % n=k')")
    return found


# ---------------------------------------------------------------------------------------------------------------
# figures: the PNG's width and the font size save_figure recorded in it

def png_info(data: bytes) -> dict:
    """A PNG's width and height (IHDR) and its text chunks (tEXt, zTXt, iTXt) as a dict."""
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("not a PNG")
    info, pos, text = {}, 8, {}
    while pos + 8 <= len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            info["width"], info["height"] = struct.unpack(">II", body[:8])
        elif kind == b"tEXt":
            key, _, value = body.partition(b"\0")
            text[key.decode("latin-1")] = value.decode("latin-1")
        elif kind == b"zTXt":
            key, _, rest = body.partition(b"\0")
            text[key.decode("latin-1")] = zlib.decompress(rest[1:]).decode("latin-1")
        elif kind == b"iTXt":
            key, _, rest = body.partition(b"\0")
            compressed, rest = rest[0], rest[2:]
            _lang, _, rest = rest.partition(b"\0")
            _translated, _, value = rest.partition(b"\0")
            text[key.decode("latin-1")] = (zlib.decompress(value) if compressed else value).decode("utf-8")
        elif kind == b"IEND":
            break
        pos += 12 + length
    info["text"] = text
    return info


def font_px(pt: float, dpi: float, png_width: float, shown_width: float) -> float:
    """The height on screen of pt-point text in a PNG drawn at dpi, shown shown_width px wide (never enlarged)."""
    return pt * dpi / 72 * min(1.0, shown_width / png_width)


def figure_problem(where: str, data: bytes, shown_width: float | None) -> str | None:
    """Why one figure's text is too small to read where it is shown (None: readable). shown_width None: the PNG's
    own width, capped by the notebook's output width (no browser to measure it)."""
    info = png_info(data)
    pt, dpi = info["text"].get(FONT_KEY), info["text"].get(DPI_KEY)
    if pt is None or dpi is None:
        return f"{where}: a figure without its smallest font size recorded (save it with report.save_figure)"
    shown = shown_width if shown_width else min(info["width"], README_WIDTH)
    px = font_px(float(pt), float(dpi), info["width"], shown)
    if px < MIN_FONT_PX:
        return (f"{where}: its smallest text is {float(pt):g} pt at {float(dpi):g} dpi in a {info['width']} px wide "
                f"figure shown {shown:.0f} px wide: {px:.1f} px on screen, under {MIN_FONT_PX} px (a narrower "
                f"figure or a larger font)")
    return None


def notebook_figures(nb: dict) -> list[tuple[int, bytes]]:
    """(cell index, PNG bytes) of every image output, in page order."""
    return [(i, base64.b64decode(_text(out["data"]["image/png"])))
            for i, cell in enumerate(nb["cells"]) if cell["cell_type"] == "code"
            for out in cell.get("outputs", []) if "image/png" in out.get("data", {})]


def figure_problems(nb: dict, layout: dict | None) -> list[str]:
    """Each figure of a notebook whose smallest text is under MIN_FONT_PX at its shown width (the page's, measured;
    without a measurement, at most README_WIDTH)."""
    shown = {}
    for img in (layout or {}).get("images", []):
        shown.setdefault(img["cell"], []).append(img["shown"])
    found, seen = [], {}
    for i, data in notebook_figures(nb):
        k = seen[i] = seen.get(i, -1) + 1
        widths = shown.get(i, [])
        problem = figure_problem(f"cell {i}", data, widths[k] if k < len(widths) else None)
        if problem:
            found.append(problem)
    return found


def readme_problems(repo: Path = REPO) -> list[str]:
    """The figures README.md and docs/*.md embed (figures/*.png), each at its shown width on GitHub (README_WIDTH,
    or an <img width=...> below it)."""
    found = []
    for md in [repo / "README.md", *sorted((repo / "docs").glob("*.md"))]:
        if not md.exists():
            continue
        text = md.read_text()
        refs = [(m.group(1), None) for m in re.finditer(r"!\[[^\]]*\]\(([^)\s]+\.png)[^)]*\)", text)]
        for tag in re.findall(r"<img\b[^>]*>", text):
            src = re.search(r"src=[\"']([^\"']+\.png)[\"']", tag)
            width = re.search(r"width=[\"']?(\d+)", tag)
            if src:
                refs.append((src.group(1), int(width.group(1)) if width else None))
        for src, width in refs:
            if re.match(r"https?:", src):
                continue
            path = (md.parent / src).resolve()
            if not path.exists():
                found.append(f"{md.relative_to(repo)}: {src} does not exist")
                continue
            png_width = png_info(path.read_bytes())["width"]
            problem = figure_problem(f"{md.relative_to(repo)}: {src}", path.read_bytes(),
                                     min(png_width, README_WIDTH, width or README_WIDTH))
            if problem:
                found.append(problem)
    return found


# ---------------------------------------------------------------------------------------------------------------
# the layout, measured in the browser

# Run in the page after it loads: each table's right edge against its output area's visible right edge (the page's,
# at most), the header cells past that edge, and each output image's natural and shown width; written into the page
# as JSON in <pre id="semifl-layout"> for --dump-dom to return.
MEASURE_JS = """
window.addEventListener('load', function () {
  var cells = Array.prototype.slice.call(document.querySelectorAll('.jp-Cell'));
  var page = document.documentElement.clientWidth;
  var out = {page: page, height: document.documentElement.scrollHeight, outputs: [], tables: [], images: []};
  document.querySelectorAll('.jp-OutputArea-output').forEach(function (a) { out.outputs.push(a.clientWidth); });
  document.querySelectorAll('table').forEach(function (t) {
    var area = t.closest('.jp-OutputArea-output, .jp-RenderedMarkdown') || t.parentElement;
    var a = area.getBoundingClientRect();
    var visible = Math.min(a.left + area.clientWidth, page);
    var row = t.querySelector('tr');
    var heads = row ? Array.prototype.slice.call(row.children) : [];
    out.tables.push({cell: cells.indexOf(t.closest('.jp-Cell')), right: t.getBoundingClientRect().right,
      visible: visible, header: heads.map(function (h) { return h.textContent.trim(); }),
      clipped: heads.filter(function (h) { return h.getBoundingClientRect().right > visible + 1; })
                    .map(function (h) { return h.textContent.trim(); })});
  });
  document.querySelectorAll('.jp-OutputArea-output img').forEach(function (img) {
    out.images.push({cell: cells.indexOf(img.closest('.jp-Cell')), natural: img.naturalWidth,
                     shown: img.getBoundingClientRect().width});
  });
  var pre = document.createElement('pre');
  pre.id = 'semifl-layout';
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
});
"""


def measure(page: Path, browser: str, width: int = LAYOUT_WIDTH) -> dict:
    """The layout of an nbconvert page laid out at `width` px by headless Chromium (MEASURE_JS's JSON)."""
    probe = page.with_name(page.stem + ".measure.html")
    probe.write_text(page.read_text(encoding="utf-8").replace("</body>", f"<script>{MEASURE_JS}</script></body>"),
                     encoding="utf-8")
    dom = subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                          "--virtual-time-budget=5000", f"--window-size={width},2000", "--dump-dom", probe.as_uri()],
                         check=True, capture_output=True, text=True, timeout=120).stdout
    m = re.search(r'<pre id="semifl-layout">(.*?)</pre>', dom, re.S)
    if not m:
        raise RuntimeError(f"{page.name}: the layout was not measured (no result in the page)")
    return json.loads(html_lib.unescape(m.group(1)))


def table_problems(layout: dict) -> list[str]:
    """Each table whose right edge is past its output area's visible edge, named by its cell and its header."""
    found = []
    for t in layout.get("tables", []):
        if t["right"] > t["visible"] + 1:
            head = " | ".join(h for h in t["header"] if h)
            found.append(f"cell {t['cell']}: a table {t['right'] - t['visible']:.0f} px wider than the page "
                         f"({t['visible']:.0f} px visible at a {LAYOUT_WIDTH} px window): columns "
                         f"{t['clipped']} cut off; its header: {head[:160]!r}")
    return found


def height(nb: dict) -> int:
    """An estimate of a window tall enough for the whole notebook (Chromium's --screenshot takes the window; check
    measures the page's height, this is its fallback), at most 16000 px: an image as tall as it shows in the page's
    output area (WIDTH - 110 px wide)."""
    h = 400
    for cell in nb["cells"]:
        h += 24 * len("".join(cell["source"])) // 160 + 60
        for out in cell.get("outputs", []):
            data = out.get("data", {})
            if "image/png" in data:
                png = png_info(base64.b64decode(_text(data["image/png"])))
                h += int(png["height"] * min(1.0, (WIDTH - 110) / png["width"])) + 40
            else:
                h += 28 * str(data.get("text/html", out.get("text", ""))).count("<tr") + 40
    return min(h, 16000)


def check(name: str, browser: str | None, out: Path = OUT) -> list[str]:
    """Convert one notebook, measure and screenshot it (when there is a browser) and return its problems."""
    path = NB_DIR / f"{name}.ipynb"
    nb = json.loads(path.read_text())
    layout = None
    from nbconvert import HTMLExporter   # in this process: `jupyter nbconvert --to html` writes the same bytes
    with tempfile.TemporaryDirectory() as tmp:
        html = HTMLExporter().from_filename(str(path))[0]
        page = Path(tmp) / f"{name}.html"
        page.write_text(html, encoding="utf-8")
        if browser:
            out.mkdir(parents=True, exist_ok=True)
            tall = min(int(measure(page, browser, WIDTH).get("height") or height(nb)) + 40, 16000)   # the whole page
            subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                            "--virtual-time-budget=3000", f"--screenshot={out / f'{name}.png'}",
                            f"--window-size={WIDTH},{tall}", page.as_uri()],
                           check=True, capture_output=True, timeout=120)
            layout = measure(page, browser)
    return problems(nb, html) + (table_problems(layout) if layout else []) + figure_problems(nb, layout)


def main(argv=None) -> int:
    names = (argv if argv is not None else sys.argv[1:]) or sorted(p.stem for p in NB_DIR.glob("*.ipynb"))
    browser = chromium()
    if browser is None:
        print("no chromium on PATH: the notebooks are checked, not screenshotted, and their tables not measured")
    bad = 0
    for name in names:
        found = check(name, browser)
        bad += bool(found)
        print(f"{name}: " + ("ok" if not found else "\n  " + "\n  ".join(found)))
    found = readme_problems()
    bad += bool(found)
    print("README.md and docs/: " + ("figures readable" if not found else "\n  " + "\n  ".join(found)))
    if browser:
        print(f"screenshots ({WIDTH} px wide): {OUT.relative_to(REPO)}/")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
