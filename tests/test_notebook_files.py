"""A committed notebook opened in JupyterLab (with jupytext) and saved unchanged (Ctrl-S) must change nothing in git:
each .ipynb is byte for byte what nbformat's writer writes for it (one-space indent, sorted keys, a final newline),
names the installed python3 kernel by its display name, and its percent-script pair (notebooks/X.py) is what jupytext
writes for it with notebooks/jupytext.toml. After a render (papermill writes no final newline):
`python -m semifl_core.report.notebook_files notebooks/*.ipynb`.

With a kernel of another Python (JupyterLab writes its version on save) too: git stores the notebooks without a
Python version, its clean filter drops the one an editor writes, and the venv's Jupyter server (its pre-save hook)
saves none; the last test saves through a Jupyter server with a second Python's kernel ($SEMIFL_SECOND_PYTHON or
python3.X on PATH, with ipykernel; skipped without one)."""
import json
import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from semifl_core.report import notebook_files

nbformat = pytest.importorskip("nbformat")
pytest.importorskip("jupytext")

NB_DIR = Path(__file__).resolve().parents[1] / "notebooks"
NOTEBOOKS = sorted(NB_DIR.glob("*.ipynb"))
FIX = "python -m semifl_core.report.notebook_files notebooks/{}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_a_notebook_is_as_nbformat_writes_it(path):
    nb = nbformat.read(path, as_version=nbformat.NO_CONVERT)
    written = nbformat.writes(nb, version=nbformat.NO_CONVERT)
    written += "" if written.endswith("\n") else "\n"
    assert path.read_text(encoding="utf-8") == written, (f"{path.name}: not as nbformat writes it; "
                                                         f"{FIX.format(path.name)}")


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_a_notebook_names_the_installed_kernel(path):
    spec = nbformat.read(path, as_version=nbformat.NO_CONVERT).metadata.kernelspec
    assert spec.name == notebook_files.KERNEL
    assert spec.display_name == notebook_files.kernel_display_name(), (
        f"{path.name}: kernelspec display name {spec.display_name!r}, the installed kernel's is "
        f"{notebook_files.kernel_display_name()!r}; {FIX.format(path.name)}")


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_the_py_pair_is_what_jupytext_writes(path):
    pair = path.with_suffix(".py")
    assert pair.read_text(encoding="utf-8") == notebook_files.paired_text(path), (
        f"{pair.name} is not what jupytext writes for {path.name}: `jupytext --sync notebooks/{path.name}` (after "
        "a render: the notebook is the newer file), then check the diff")


def test_save_as_jupyter_adds_the_final_newline_and_the_kernel_name(tmp_path):
    """What papermill leaves (no final newline, another display name) is rewritten as JupyterLab saves it; a second
    call changes nothing."""
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("# x")])
    nb.metadata.kernelspec = {"display_name": "Python 3", "language": "python", "name": "python3"}
    path = tmp_path / "x.ipynb"
    path.write_text(nbformat.writes(nb).rstrip("\n"), encoding="utf-8")
    assert notebook_files.save_as_jupyter(path) is True
    text = path.read_text(encoding="utf-8")
    assert text.endswith("}\n") and notebook_files.kernel_display_name() in text
    assert notebook_files.save_as_jupyter(path) is False and notebook_files.main(["--check", str(path)]) == 0


# ---- saving with another Python: the kernel's version stays out of git (notebook_files: clean, pre_save_hook) ----

REPO = NB_DIR.parent


def _git(*args, cwd=REPO, check=True) -> subprocess.CompletedProcess:
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=check)


def _with_version(text: str, version: str) -> str:
    """A notebook's text as JupyterLab saves it with a kernel of Python `version`."""
    nb = json.loads(text)
    nb["metadata"].setdefault("language_info", {})["version"] = version
    return json.dumps(nb, sort_keys=True, indent=1, ensure_ascii=False, separators=(",", ": ")) + "\n"


def test_clean_drops_the_python_version_and_a_renders_timings():
    text = (NB_DIR / "table4.ipynb").read_text(encoding="utf-8")
    assert notebook_files.clean(text) == text                       # a committed notebook is its own clean text
    assert notebook_files.clean(_with_version(text, "3.12.1")) == text
    assert notebook_files.clean("not a notebook {") == "not a notebook {"
    nb = json.loads(text)   # as papermill writes it: timings on the notebook and on every cell
    nb["metadata"]["papermill"] = {"duration": 1.5}
    for cell in nb["cells"]:
        cell["metadata"].update(papermill={"duration": 0.1}, execution={"iopub.status.idle": "2026-12-07T01:00:00Z"})
    assert notebook_files.clean(json.dumps(nb)) == text


@pytest.mark.skipif(shutil.which("git") is None or _git("rev-parse", check=False).returncode != 0,
                    reason="not a git clone")
@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_git_stores_a_notebook_without_the_python_version(path):
    """What git stores (the index) is its own clean text, so that with the filter configured a fresh clone is clean;
    a notebook added without the filter carries the version of the Python that rendered it."""
    rel = path.relative_to(REPO).as_posix()
    assert _git("check-attr", "filter", "--", rel).stdout.strip().endswith(f": filter: {notebook_files.FILTER}")
    stored = _git("show", f":{rel}").stdout
    assert notebook_files.clean(stored) == stored, (
        f"{rel} is stored with a Python version: `make install` (it configures git's filter), then "
        f"`python -m semifl_core.report.notebook_files {rel}` and `git add {rel}`")


def _repo_copy(tmp_path: Path, name: str = "table4") -> Path:
    """A git repository holding one committed notebook, its pair and jupytext.toml, .gitattributes and the filter
    script where CLEAN finds it, set up by `make install`'s notebook_files.install (its Jupyter config under
    tmp_path/venv)."""
    repo = tmp_path / "repo"
    (repo / "notebooks").mkdir(parents=True)
    (repo / "semifl_core" / "report").mkdir(parents=True)
    shutil.copy(REPO / ".gitattributes", repo)
    shutil.copy(Path(notebook_files.__file__), repo / "semifl_core" / "report")
    for f in (f"{name}.ipynb", f"{name}.py", "jupytext.toml"):
        shutil.copy(NB_DIR / f, repo / "notebooks")
    (repo / ".gitignore").write_text(".ipynb_checkpoints/\nsemifl_core/\n")
    _git("init", "-q", cwd=repo)
    notebook_files.install(prefix=tmp_path / "venv", repo=repo)
    assert _git("config", f"filter.{notebook_files.FILTER}.clean", cwd=repo).stdout.strip() == notebook_files.CLEAN
    _git("add", ".", cwd=repo)
    _git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "notebook", cwd=repo)
    return repo


@pytest.mark.skipif(shutil.which("git") is None or shutil.which("python3") is None, reason="needs git and python3")
def test_the_git_filter_hides_the_python_version(tmp_path):
    """Any editor's save with another Python's version: `git diff` sees nothing (without the filter it would)."""
    repo = _repo_copy(tmp_path)
    nb = repo / "notebooks" / "table4.ipynb"
    nb.write_text(_with_version(nb.read_text(encoding="utf-8"), "3.12.1"), encoding="utf-8")
    assert _git("diff", "--quiet", cwd=repo, check=False).returncode == 0, _git("diff", cwd=repo).stdout[-2000:]
    unfiltered = _git("-c", f"filter.{notebook_files.FILTER}.clean=cat", "diff", "--quiet", cwd=repo, check=False)
    assert unfiltered.returncode == 1


def test_install_keeps_the_jupyter_config_it_finds(tmp_path):
    conf = tmp_path / "etc" / "jupyter" / "jupyter_server_config.json"
    conf.parent.mkdir(parents=True)
    conf.write_text(json.dumps({"ServerApp": {"open_browser": False}, "ContentsManager": {"allow_hidden": True}}))
    notebook_files.install(prefix=tmp_path, repo=tmp_path)          # not a git clone: the hook only
    assert json.loads(conf.read_text()) == {"ServerApp": {"open_browser": False}, "ContentsManager": {
        "allow_hidden": True, **notebook_files.SERVER_CONFIG["ContentsManager"]}}


def _second_python() -> str | None:
    """A Python 3 other than this one's minor version with ipykernel: $SEMIFL_SECOND_PYTHON, else python3.10-3.14 on
    PATH; None when there is none."""
    here = "%d.%d" % sys.version_info[:2]
    names = [os.environ.get("SEMIFL_SECOND_PYTHON")] + [f"python3.{m}" for m in range(10, 15)]
    for name in filter(None, names):
        exe = shutil.which(name)
        if not exe:
            continue
        try:
            out = subprocess.run([exe, "-c", "import sys, ipykernel; print('%d.%d' % sys.version_info[:2])"],
                                 capture_output=True, text=True, timeout=60)
        except (OSError, subprocess.SubprocessError):
            continue
        if out.returncode == 0 and out.stdout.strip() not in ("", here):
            return exe
    return None


SECOND_PYTHON = _second_python()


def _language_info(python: str, kernels: Path) -> dict:
    """language_info from the kernel_info reply of an ipykernel run by `python` (what JupyterLab writes on save),
    its kernelspec registered in `kernels` as KERNEL."""
    from jupyter_client import KernelManager
    from jupyter_client.kernelspec import KernelSpecManager
    spec = kernels / notebook_files.KERNEL
    spec.mkdir(parents=True)
    (spec / "kernel.json").write_text(json.dumps({
        "argv": [python, "-m", "ipykernel_launcher", "-f", "{connection_file}"], "language": "python",
        "display_name": notebook_files.kernel_display_name()}))
    km = KernelManager(kernel_name=notebook_files.KERNEL,
                       kernel_spec_manager=KernelSpecManager(kernel_dirs=[str(kernels)]))
    km.start_kernel()
    kc = km.client()
    try:
        kc.start_channels()
        kc.wait_for_ready(timeout=60)
        return kc.kernel_info(reply=True, timeout=30)["content"]["language_info"]
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)


@pytest.mark.skipif(SECOND_PYTHON is None, reason="no second Python 3 with ipykernel (python3.X on PATH, or "
                                                   "SEMIFL_SECOND_PYTHON=/path/to/python)")
@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_a_save_in_jupyter_with_another_python_changes_nothing_git_sees(tmp_path):
    """A committed notebook saved unchanged through the Jupyter server as JupyterLab saves it (GET the model, set
    language_info from the kernel's kernel_info reply, PUT it back; jupytext writes the pair), the kernel run by
    another Python, the server configured as `make install` configures the venv's (notebook_files.install): the
    files are byte for byte the committed ones (`git status` is clean)."""
    pytest.importorskip("jupyter_server")
    import urllib.request
    info = _language_info(SECOND_PYTHON, tmp_path / "jupyter" / "kernels")
    assert info["version"].rsplit(".", 1)[0] != "%d.%d" % sys.version_info[:2]
    repo = _repo_copy(tmp_path)
    (tmp_path / "config").mkdir()
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {**os.environ, "JUPYTER_CONFIG_DIR": str(tmp_path / "config"), "JUPYTER_PATH": str(tmp_path / "jupyter"),
           "JUPYTER_CONFIG_PATH": str(tmp_path / "venv" / "etc" / "jupyter"),   # what install wrote there
           "JUPYTER_RUNTIME_DIR": str(tmp_path / "runtime"), "PYTHONPATH": str(REPO)}
    server = subprocess.Popen([sys.executable, "-m", "jupyter_server", "--no-browser", f"--port={port}",
                               "--IdentityProvider.token=t", f"--ServerApp.root_dir={repo}", "--allow-root"],
                              env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    url = f"http://127.0.0.1:{port}/api/contents/notebooks/table4.ipynb"

    def call(method, data=None):
        req = urllib.request.Request(url, method=method, headers={"Authorization": "token t"},
                                     data=None if data is None else json.dumps(data).encode())
        with urllib.request.urlopen(req, timeout=60) as r:
            return json.loads(r.read())
    try:
        for _ in range(240):
            try:
                model = call("GET")
                break
            except OSError:
                assert server.poll() is None, server.stderr.read()[-3000:]
                time.sleep(0.25)
        else:
            pytest.fail("the Jupyter server did not answer in 60 s")
        model["content"]["metadata"]["language_info"] = info
        call("PUT", {"type": "notebook", "format": "json", "content": model["content"]})
    finally:
        server.terminate()
        server.wait(timeout=30)
    assert _git("status", "--porcelain", cwd=repo).stdout == ""
    assert _git("diff", "--quiet", cwd=repo, check=False).returncode == 0
