"""The notebooks' files as JupyterLab saves them, so that opening a committed notebook and pressing Ctrl-S changes
nothing in git: the .ipynb as nbformat.write writes it (one-space indent, sorted keys, a final newline) with the
installed python3 kernel's display name ("Python 3 (ipykernel)") and no Python version; its percent-script pair
(notebooks/X.py) as jupytext writes it with notebooks/jupytext.toml. papermill writes a notebook without the final
newline, with its kernel's Python version and with every cell's timings (dropped: a render changes a notebook's
file only where its outputs change): after a render,

    python -m semifl_core.report.notebook_files notebooks/*.ipynb     # rewrites each as JupyterLab would save it

(`--check`: rewrites nothing, names those that differ, exits 1; tests/test_notebook_files.py checks the committed ones).

JupyterLab saves the running kernel's Python version in metadata.language_info.version, the one thing that differs
between readers' saves of an unchanged notebook (docs/usage.md, "Saving a notebook"). The committed notebooks carry
neither it nor a render's timings (`drop_volatile`), and `make install` (`--install`) sets up two guards dropping them
from the notebooks .gitattributes filters:
pre_save_hook in the venv's JupyterLab (etc/jupyter/jupyter_server_config.json), so that the saved file is the
committed one byte for byte and `git status` stays clean; and git's clean filter FILTER (CLEAN: this file as a script,
standard library only, so any python3 runs it), so that for other editors `git diff` and a commit see no change
(`git status` may list the file until `git add` finds it equal)."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

KERNEL = "python3"   # the kernel every notebook names (papermill -k python3)
FILTER = "notebook-metadata"   # the git filter .gitattributes names for notebooks/*.ipynb
CLEAN = "python3 semifl_core/report/notebook_files.py --clean"   # its clean command (git runs it at the top level)


def drop_volatile(nb) -> bool:
    """Drop, in place, what differs between two saves or renders of an unchanged notebook (a dict): the kernel's
    Python version (metadata.language_info.version) and papermill's and nbclient's timings (metadata.papermill, and
    each cell's papermill and execution metadata). True if there was any."""
    if not isinstance(nb, dict):
        return False
    meta = nb.get("metadata", {})
    places = [(meta.get("language_info"), "version"), (meta, "papermill")]
    places += [(cell.get("metadata"), key) for cell in nb.get("cells", []) if isinstance(cell, dict)
               for key in ("papermill", "execution")]
    found = [(d, key) for d, key in places if isinstance(d, dict) and key in d]
    for d, key in found:
        del d[key]
    return bool(found)


def clean(text: str) -> str:
    """The notebook text without drop_volatile's metadata (FILTER's clean side: what git stores), as nbformat writes
    it, so that a committed notebook is its own clean text; other text as it is."""
    try:
        nb = json.loads(text)
    except ValueError:
        return text
    if not drop_volatile(nb):
        return text
    return json.dumps(nb, sort_keys=True, indent=1, ensure_ascii=False, separators=(",", ": ")) + "\n"


def filtered(path) -> bool:
    """Whether git gives the file at path the clean filter FILTER (.gitattributes); False outside a git clone."""
    path = Path(path)
    try:
        out = subprocess.run(["git", "check-attr", "filter", "--", path.name], cwd=path.parent, capture_output=True,
                             text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return False
    return out.strip().endswith(f": filter: {FILTER}")


def pre_save_hook(model, path, contents_manager, **kwargs):
    """Jupyter's pre-save hook (SERVER_CONFIG): saves a notebook git filters with FILTER without drop_volatile's
    metadata."""
    if model.get("type") == "notebook" and filtered(Path(contents_manager.root_dir, path.strip("/"))):
        drop_volatile(model["content"])


# `--install` sets this in the venv's etc/jupyter/jupyter_server_config.json (the .d folder only enables extensions)
SERVER_CONFIG = {"ContentsManager": {"pre_save_hook": "semifl_core.report.notebook_files.pre_save_hook"}}


def install(prefix=None, repo=None) -> str:
    """Set up both guards: the pre-save hook in the Jupyter config of the Python at `prefix` (default: this one, the
    venv's) and, if `repo` (default: this checkout) is a git clone, the clean filter. Returns one line saying what."""
    conf = Path(prefix or sys.prefix, "etc", "jupyter", "jupyter_server_config.json")
    config = json.loads(conf.read_text()) if conf.exists() else {}
    for section, values in SERVER_CONFIG.items():   # the file's other settings are kept
        config.setdefault(section, {}).update(values)
    conf.parent.mkdir(parents=True, exist_ok=True)
    conf.write_text(json.dumps(config, indent=2) + "\n")
    done = f"Jupyter's pre-save hook in {conf}"
    repo = Path(repo or Path(__file__).resolve().parents[2])
    if subprocess.run(["git", "rev-parse", "--git-dir"], cwd=repo, capture_output=True).returncode == 0:
        subprocess.run(["git", "config", f"filter.{FILTER}.clean", CLEAN], cwd=repo, check=True)
        done += f"; git's clean filter {FILTER} in {repo}"
    return "notebooks saved without the kernel's Python version: " + done


def kernel_display_name(name: str = KERNEL) -> str:
    """The display name of the installed kernel `name` (what JupyterLab writes into a notebook it saves)."""
    from jupyter_client.kernelspec import KernelSpecManager
    return KernelSpecManager().get_kernel_spec(name).display_name


def as_jupyter(path) -> str:
    """The text JupyterLab would save for the notebook at path, as git stores it (nbformat, KERNEL's spec, clean)."""
    import nbformat
    nb = nbformat.read(str(path), as_version=nbformat.NO_CONVERT)
    spec = nb.metadata.setdefault("kernelspec", {})
    spec.update(display_name=kernel_display_name(spec.get("name", KERNEL)), language=spec.get("language", "python"),
                name=spec.get("name", KERNEL))
    drop_volatile(nb)
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
    """The percent-script pair (X.py) jupytext writes for the notebook at path, with its folder's jupytext.toml."""
    import jupytext
    from jupytext.config import load_jupytext_config
    path = Path(path)
    config = load_jupytext_config(str(path.parent.resolve()))
    return jupytext.writes(jupytext.read(path), fmt="py:percent", config=config)


def main(argv=None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if args == ["--clean"]:   # git's clean filter: a notebook on stdin, what git stores on stdout
        data = sys.stdin.buffer.read()
        try:
            data = clean(data.decode("utf-8")).encode("utf-8")
        except UnicodeDecodeError:
            pass
        sys.stdout.buffer.write(data)
        return 0
    if args == ["--install"]:
        print(install())
        return 0
    check = "--check" in args
    paths = [a for a in args if a != "--check"]
    if not paths:
        print("usage: python -m semifl_core.report.notebook_files [--check] NOTEBOOK.ipynb ... | --clean < NOTEBOOK "
              "| --install")
        return 2
    differ = []
    for p in paths:
        if check:
            if clean(Path(p).read_text(encoding="utf-8")) != as_jupyter(p):   # as git sees it
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
