"""The committed notebooks as a reader sees them: each converted to HTML (`jupyter nbconvert --to html`) and
screenshotted at 1400 px wide by a headless Chromium into build/notebook-screenshots/ (git-ignored). Fails on what a
reader should never see: an error output, a stderr stream (a red band), an NBVAL marker (test plumbing belongs in cell
tags), or a NaN in a table.

    python tests/browser_check.py [NAME ...]      # every notebook, or the named ones; `make check-notebooks`
"""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
NB_DIR = REPO / "notebooks"
OUT = REPO / "build" / "notebook-screenshots"
WIDTH = 1400
NAN_CELL = re.compile(r"<t[dh][^>]*>\s*(NaN|nan|<NA>)\s*</t[dh]>")


def chromium() -> str | None:
    """The headless browser: $CHROMIUM, else Debian's chromium (or chrome) on PATH; None when there is none."""
    for name in (os.environ.get("CHROMIUM"), "chromium", "chromium-browser", "google-chrome"):
        if name and shutil.which(name):
            return shutil.which(name)
    return None


def problems(nb: dict, html: str) -> list[str]:
    """What a reader should not see in one notebook (its JSON and its HTML)."""
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
    return found


def height(nb: dict) -> int:
    """A window tall enough for the whole notebook (Chromium's --screenshot takes the window), at most 16000 px."""
    h = 400
    for cell in nb["cells"]:
        h += 24 * len("".join(cell["source"])) // 160 + 60
        for out in cell.get("outputs", []):
            data = out.get("data", {})
            h += 560 if "image/png" in data else 28 * str(data.get("text/html", out.get("text", ""))).count("<tr") + 40
    return min(h, 16000)


def check(name: str, browser: str | None, out: Path = OUT) -> list[str]:
    """Convert one notebook, screenshot it (when there is a browser) and return its problems."""
    path = NB_DIR / f"{name}.ipynb"
    nb = json.loads(path.read_text())
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run([sys.executable, "-m", "jupyter", "nbconvert", "--to", "html", "--output-dir", tmp, str(path)],
                       check=True, capture_output=True)
        page = Path(tmp) / f"{name}.html"
        html = page.read_text()
        if browser:
            out.mkdir(parents=True, exist_ok=True)
            subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                            "--virtual-time-budget=3000", f"--screenshot={out / f'{name}.png'}",
                            f"--window-size={WIDTH},{height(nb)}", page.as_uri()],
                           check=True, capture_output=True, timeout=120)
    return problems(nb, html)


def main(argv=None) -> int:
    names = (argv if argv is not None else sys.argv[1:]) or sorted(p.stem for p in NB_DIR.glob("*.ipynb"))
    browser = chromium()
    if browser is None:
        print("no chromium on PATH: the notebooks are checked, not screenshotted")
    bad = 0
    for name in names:
        found = check(name, browser)
        bad += bool(found)
        print(f"{name}: " + ("ok" if not found else "; ".join(found)))
    if browser:
        print(f"screenshots ({WIDTH} px wide): {OUT.relative_to(REPO)}/")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
