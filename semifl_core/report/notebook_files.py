"""The notebooks' files as JupyterLab saves them, so that opening a committed notebook and pressing Ctrl-S changes
nothing in git: the .ipynb as nbformat.write writes it (one-space indent, sorted keys, a final newline) with the
installed python3 kernel's display name ("Python 3 (ipykernel)"); its percent-script pair (notebooks/X.py) as jupytext
writes it with notebooks/jupytext.toml. papermill writes a notebook without the final newline: after a render,

    python -m semifl_core.report.notebook_files notebooks/*.ipynb     # rewrites each as JupyterLab would save it

(`--check`: rewrites nothing, names those that differ and exits 1). tests/test_notebook_files.py checks the committed
notebooks and their pairs."""
from __future__ import annotations

import sys
from pathlib import Path

KERNEL = "python3"   # the kernel every notebook names (papermill -k python3)


def kernel_display_name(name: str = KERNEL) -> str:
    """The display name of the installed kernel `name` (what JupyterLab writes into a notebook it saves)."""
    from jupyter_client.kernelspec import KernelSpecManager
    return KernelSpecManager().get_kernel_spec(name).display_name


def as_jupyter(path) -> str:
    """The text JupyterLab would save for the notebook at path: nbformat's writer, and the kernelspec of the
    installed KERNEL."""
    import nbformat
    nb = nbformat.read(str(path), as_version=nbformat.NO_CONVERT)
    spec = nb.metadata.setdefault("kernelspec", {})
    spec.update(display_name=kernel_display_name(spec.get("name", KERNEL)), language=spec.get("language", "python"),
                name=spec.get("name", KERNEL))
    text = nbformat.writes(nb, version=nbformat.NO_CONVERT)
    return text if text.endswith("\n") else text + "\n"   # nbformat.write ends the file with a newline


def save_as_jupyter(path) -> bool:
    """Rewrite the notebook at path as JupyterLab would save it (as_jupyter); True when that changed the file."""
    path = Path(path)
    text = as_jupyter(path)
    if path.read_text(encoding="utf-8") == text:
        return False
    path.write_text(text, encoding="utf-8")
    return True


def paired_text(path) -> str:
    """What jupytext (with the jupytext.toml of the notebook's folder) writes for the notebook's percent-script
    pair, from the notebook at path: what JupyterLab with jupytext saves as X.py."""
    import jupytext
    from jupytext.config import load_jupytext_config
    path = Path(path)
    config = load_jupytext_config(str(path.parent.resolve()))
    return jupytext.writes(jupytext.read(path), fmt="py:percent", config=config)


def main(argv=None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    check = "--check" in args
    paths = [a for a in args if a != "--check"]
    if not paths:
        print("usage: python -m semifl_core.report.notebook_files [--check] NOTEBOOK.ipynb ...")
        return 2
    differ = []
    for p in paths:
        if check:
            if Path(p).read_text(encoding="utf-8") != as_jupyter(p):
                differ.append(p)
        elif save_as_jupyter(p):
            differ.append(p)
    if check and differ:
        print("not as JupyterLab saves them (python -m semifl_core.report.notebook_files NOTEBOOK ...): "
              + ", ".join(differ))
        return 1
    if differ:
        print("rewritten as JupyterLab saves them: " + ", ".join(differ))
    return 0


if __name__ == "__main__":
    sys.exit(main())
