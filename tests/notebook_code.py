"""A notebook's own code, for its tests: the cells of notebooks/<name>.py tagged `definitions`, executed in order into
one namespace. Such a cell defines the functions that build that notebook's tables, figures and claims (they are that
notebook's alone, so they live in it, where its reader sees them); it trains nothing and reads no run."""
import os
from pathlib import Path

import jupytext

from semifl_core.workers import usable_cores

NB_DIR = Path(__file__).resolve().parents[1] / "notebooks"

# notebooks a test executes or checks at once: the CI machine's two cores. SEMIFL_TEST_JOBS=1 runs them one by one
# (e.g. on a machine whose other core trains a run).
JOBS = max(1, int(os.environ.get("SEMIFL_TEST_JOBS", min(2, len(usable_cores())))))


def load(name: str) -> dict:
    notebook = jupytext.read(NB_DIR / f"{name}.py")
    cells = [c.source for c in notebook.cells if "definitions" in c.metadata.get("tags", [])]
    assert cells, f"notebooks/{name}.py has no cell tagged 'definitions'"
    namespace: dict = {"__name__": f"notebook_{name}"}
    for source in cells:
        exec(compile(source, f"notebooks/{name}.py", "exec"), namespace)
    return namespace
