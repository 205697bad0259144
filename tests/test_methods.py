"""The method table is the one place that names a method: a new method is one function plus one entry, and it
runs through `semifl run` like the others. The package has no import cycle."""
import ast
from pathlib import Path

import pandas as pd
import pytest
import torch
import torch.nn.functional as F

import semifl_core
from semifl_core import methods, results
from semifl_core.cli import main as cli_main
from semifl_core.config import ConfigError, profile
from semifl_core.methods import METHODS, Method, register
from semifl_core.models import load_weights
from semifl_core.tasks import make_tasks

PACKAGE = Path(semifl_core.__file__).parent
NAMES = (methods.SEMIFL, methods.FEDAVG_FIXMATCH, methods.PARTIALLY_SUPERVISED, methods.FULLY_SUPERVISED,
         methods.FEDAVG_SUPERVISED)


# ---------------------------------------------------------------------- a toy method, registered by the test
def smoothed_loss(f, b):
    return F.cross_entropy(f(b["x"]), b["y"], label_smoothing=0.2), b["x"].new_zeros(0)


def toy_round(exp, st, rnd):
    """The server's labeled data with a label-smoothed loss: a method the package does not have."""
    cfg, data = exp.cfg, exp.data
    spec = {"x": data.x_train[exp.server_idx], "y": data.y_train[exp.server_idx]}
    tasks = make_tasks([spec], cfg.server_batch, cfg.server_epochs, rnd.rng, rnd.g, flip=data.flip)
    with rnd.timed("server"):
        stacked, _, stats = exp.server_engine.train(st.model, tasks, smoothed_loss, rnd.lr, [None])
        load_weights(st.model, {k: v[0] for k, v in stacked.items()})
    rnd.record.server_loss = stats[0, 0].item() / tasks[0].steps
    return rnd.record


@pytest.fixture
def toy():
    method = register(Method("toy-smoothing", "Toy (label smoothing)", toy_round, federated=False,
                             unused=methods.FEDERATION_FIELDS))
    yield method
    del METHODS[method.name]


def test_a_registered_method_trains_through_semifl_run(toy, tmp_path, capsys):
    argv = ["run", "--profile", "smoke", "--device", "cpu", "--set", "rounds=2", "--results-dir", str(tmp_path)]
    assert cli_main([*argv, "--algorithm", toy.name]) == 0
    assert cli_main([*argv, "--algorithm", methods.PARTIALLY_SUPERVISED]) == 0
    cfg = profile("smoke", algorithm=toy.name, rounds=2)
    info = results.open_run(tmp_path, cfg)
    assert info.state == "complete" and info.path.name.startswith("toy-smoothing-synthetic-ns100-seed0-")
    mine = pd.read_csv(info.path / "metrics.csv")
    assert list(mine["round"]) == [1, 2] and mine.test_acc.notna().all()
    # the same data, plan and start as Partially Supervised: only the loss differs, so the losses differ
    theirs = pd.read_csv(results.open_run(tmp_path, cfg.replace(algorithm=methods.PARTIALLY_SUPERVISED)).path
                         / "metrics.csv")
    assert (mine.server_loss > theirs.server_loss).all()
    # the fields it declared unused are not in its run key; the CLI lists it
    assert cfg.replace(partition="dir-0.3").key() == cfg.key()
    assert cli_main(["run", "--help"]) == 0
    assert toy.name in "".join(capsys.readouterr().out.split())   # help text wraps at hyphens


def test_an_unregistered_or_doubly_registered_method_is_refused(toy):
    with pytest.raises(ConfigError, match=r"algorithm='toy-smoothng'.*did you mean 'toy-smoothing'"):
        profile("smoke", algorithm="toy-smoothng")
    with pytest.raises(ValueError, match="already registered"):
        register(Method(toy.name, "again", toy_round))


# ---------------------------------------------------------------------- names and imports
# The same strings with another meaning: strong_aug="semifl" is the authors' RandAugment variant, and the program.
OTHER_MEANING = {(f, methods.SEMIFL) for f in ("config.py", "augment.py", "tasks.py", "cli.py")}


def test_method_names_are_written_only_in_the_method_table():
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path == PACKAGE / "methods" / "__init__.py":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Constant) and node.value in NAMES and (path.name, node.value) not in OTHER_MEANING:
                found.append(f"{path.relative_to(PACKAGE)}:{node.lineno} {node.value!r}")
    assert found == []


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph() -> dict[str, set[str]]:
    """module -> the package modules it imports, at module level or inside functions."""
    modules = {_module_name(p): p for p in PACKAGE.rglob("*.py")}
    graph = {}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        edges = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                edges |= {a.name for a in node.names if a.name in modules}
            elif isinstance(node, ast.ImportFrom):
                base = package.rsplit(".", node.level - 1)[0] if node.level else ""
                target = ".".join(p for p in (base, node.module or "") if p)
                subs = {f"{target}.{a.name}" for a in node.names} & set(modules)
                edges |= subs or ({target} & set(modules))
        graph[name] = edges - {name}
    return graph


def test_the_import_walk_sees_the_imports():
    graph = import_graph()
    assert "semifl_core.methods.semifl" in graph["semifl_core.methods.baselines"]
    assert {"semifl_core.tasks", "semifl_core.models"} <= graph["semifl_core.methods.semifl"]
    assert "semifl_core.results" in graph["semifl_core.run"]


def test_no_import_cycles():
    graph, state, cycles = import_graph(), {}, []

    def visit(node, stack):
        state[node] = "open"
        for nxt in sorted(graph[node]):
            if state.get(nxt) == "open":
                cycles.append(" -> ".join(stack[stack.index(nxt):] + [nxt]))
            elif nxt not in state:
                visit(nxt, stack + [nxt])
        state[node] = "done"
    for node in sorted(graph):
        if node not in state:
            visit(node, [node])
    assert cycles == []



def test_code_lines_fit_the_line_width():
    """Every line of the package's, the scripts' and the tests' Python, and of the notebooks' code cells, is at most
    120 characters (the notebooks' markdown lines are paragraphs: jupytext keeps each on one line)."""
    root = Path(__file__).resolve().parents[1]
    long = []
    for path in sorted([*root.glob("semifl_core/**/*.py"), *root.glob("scripts/*.py"), *root.glob("tests/*.py"),
                        *root.glob("notebooks/*.py")]):
        markdown = False
        for i, line in enumerate(path.read_text().splitlines(), 1):
            if line.startswith("# %%"):
                markdown = "[markdown]" in line
            elif not markdown and len(line) > 120:
                long.append(f"{path.relative_to(root)}:{i} ({len(line)} characters)")
    assert long == []


# ---------------------------------------------------------------------- a method's own fields, and bad input about them
def test_declaring_a_field_changes_no_committed_runs_key(monkeypatch):
    """Every committed run's key, recomputed with a new field declared by SemiFL and by Partially Supervised, is the
    one it was stored under: a method's field at its default is left out of the key."""
    import dataclasses
    import json

    from semifl_core.config import run_key
    from semifl_core.methods import Field
    stored = [json.loads(p.read_text()) for p in (PACKAGE.parent / "results").glob("*/config.json")]
    assert len(stored) > 100
    for name in (methods.SEMIFL, methods.PARTIALLY_SUPERVISED):
        own = {**METHODS[name].fields, "toy_mu": Field(0.5)}
        monkeypatch.setitem(METHODS, name, dataclasses.replace(METHODS[name], fields=own))
    assert all(run_key(s["config"]) == s["key"] for s in stored)
    # and built back as a Config (a field since moved into its method's own is there at its default): the same key
    from semifl_core.config import Config
    assert all(Config.from_dict(s["config"]).key() == s["key"] for s in stored)
    cfg = profile("smoke")
    assert cfg.toy_mu == 0.5 and cfg.key() == cfg.replace(toy_mu=0.5).key() != cfg.replace(toy_mu=0.25).key()


def test_bad_input_about_methods_is_one_line():
    from semifl_core.engine import module_net
    from semifl_core.report import check_methods
    with pytest.raises(ConfigError, match=r"^methods: 'semifl-prx' is not a registered method; registered: semifl, "):
        check_methods(["semifl-prx"])
    with pytest.raises(ConfigError, match=r"^methods='semifl': must be a list of method names"):
        check_methods("semifl")
    f = module_net(torch.nn.Linear(2, 3))
    with pytest.raises(ConfigError, match=r"^a loss asked for the weights 'fc.w', which this network does not have; "
                                          r"it has weight, bias$"):
        f.params["fc.w"]
    with pytest.raises(ConfigError, match=r"^unknown config field 'prox_muu'"):
        profile("smoke", prox_muu=0.1)
    with pytest.raises(ConfigError, match=r"^SEMIFL_METHODS: cannot import 'no_such_module_here'"):
        methods.load_plugins("no_such_module_here")


def test_a_broken_plugin_is_one_line_and_help_still_works(tmp_path):
    """A SEMIFL_METHODS module that fails to import (any error), or registers a method badly: `semifl --help` still
    prints its help, and a command says one line naming the module and the error's last line (or the method and the
    field), exit 2."""
    import os
    import subprocess
    import sys
    (tmp_path / "broken_plugin.py").write_text("import no_such_dependency_xyz\n")
    (tmp_path / "clash_plugin.py").write_text(
        "from semifl_core.methods import Field, Method, register\n"
        "register(Method('my-semifl', 'Mine', 'x:y', fields={'threshold': Field(0.5)}))\n")
    (tmp_path / "raising_plugin.py").write_text("raise ZeroDivisionError('division by zero in my module')\n")
    env = dict(os.environ, PYTHONPATH=f"{tmp_path}{os.pathsep}{os.environ.get('PYTHONPATH', '')}")
    for module, want in (("broken_plugin", "cannot import 'broken_plugin' (ModuleNotFoundError: No module named "
                                           "'no_such_dependency_xyz')"),
                         ("raising_plugin", "ZeroDivisionError: division by zero in my module"),
                         ("clash_plugin", "method 'my-semifl': field 'threshold' is already a field of Config")):
        env["SEMIFL_METHODS"] = module
        run = lambda *args: subprocess.run([sys.executable, "-m", "semifl_core.cli", *args], env=env,  # noqa: E731
                                           capture_output=True, text=True)
        help_ = run("--help")
        assert help_.returncode == 0 and "usage" in help_.stdout.lower() and not help_.stderr
        bad = run("profiles")
        assert bad.returncode == 2 and "Traceback" not in bad.stderr, bad.stderr
        assert len(bad.stderr.strip().splitlines()) == 1 and want in bad.stderr, bad.stderr


@pytest.mark.parametrize("method, said", [
    (Method("toy-no-round", "Toy"), r"^method 'toy-no-round': no round; allowed: round='module:function'"),
    (Method("toy-plain", "Toy", variant_of="semifl"), r"^method 'toy-plain': a variant of 'semifl' that changes "
                                                      r"nothing .* would run plain SemiFL under a new name"),
])
def test_a_method_without_a_round_or_a_variant_that_changes_nothing_is_refused_in_one_line(method, said):
    with pytest.raises(ConfigError, match=said):
        register(method)
    assert method.name not in METHODS


def test_a_hook_that_does_not_load_or_a_default_its_check_refuses_is_one_line_before_any_run(tmp_path, capsys):
    """A variant's "module:name" client_loss with a typo is refused when its config is built (nothing trains, no run
    directory is made); a field whose default fails its own check is refused at register; `semifl runs` says that a
    run of a method not registered here is one (its module is not in SEMIFL_METHODS)."""
    from semifl_core.methods import Field
    register(Method("toy-typo", "Toy", variant_of="semifl", client_loss="semifl_core.methods.semifl_loss:no_such_fn"))
    try:
        with pytest.raises(ConfigError, match=r"^method 'toy-typo': client_loss='semifl_core.methods.semifl_loss:"
                                              r"no_such_fn' does not load \(AttributeError: .*\); allowed: "):
            profile("smoke", algorithm="toy-typo")
        assert cli_main(["run", "--profile", "smoke", "--algorithm", "toy-typo", "--results-dir",
                         str(tmp_path / "store")]) == 2
        assert not (tmp_path / "store").exists() or not any((tmp_path / "store").iterdir())
    finally:
        del METHODS["toy-typo"]
    with pytest.raises(ConfigError, match=r"^method 'toy-bad-default': field 'toy_mu': its default -1.0 fails its "
                                          r"own check \(must be >= 0\)"):
        register(Method("toy-bad-default", "Toy", variant_of="semifl",
                        fields={"toy_mu": Field(-1.0, lambda v: "" if v >= 0 else "must be >= 0")}))
    with pytest.raises(ConfigError, match=r"^method 'toy-no-field': field 'toy_mu': 0.5 is not a Field; allowed: "):
        register(Method("toy-no-field", "Toy", variant_of="semifl", fields={"toy_mu": 0.5}))
    assert "toy-bad-default" not in METHODS and "toy-no-field" not in METHODS
    run_dir = tmp_path / "runs" / "semifl-prox-synthetic-iid-ns100-seed0-0123456789ab"
    run_dir.mkdir(parents=True)
    (run_dir / "config.json").write_text('{"config": {"algorithm": "semifl-prox"}}')
    capsys.readouterr()
    assert cli_main(["runs", "--results-dir", str(tmp_path / "runs")]) == 0
    assert (f"not a run, left alone: {run_dir.name}/ (a run of 'semifl-prox', not registered here: name its module "
            "in SEMIFL_METHODS)") in capsys.readouterr().out


def test_a_value_the_method_fixes_is_never_overridden_silently_and_an_unknown_name_points_at_semifl_methods():
    with pytest.raises(ConfigError, match=r"^finetune=True: fedavg-fixmatch fixes finetune=False .*; allowed for "
                                          r"fedavg-fixmatch: finetune=False$"):
        profile("smoke", algorithm="fedavg-fixmatch", finetune=True)
    assert profile("smoke", algorithm="fedavg-fixmatch", finetune=False).finetune is False   # the same value: fine
    with pytest.raises(ConfigError, match=r"^algorithm='semifl-prx': allowed are .*SEMIFL_METHODS"):
        profile("smoke", algorithm="semifl-prx")


def test_table1_takes_an_added_methods_own_fields_and_says_where_a_stray_one_goes(monkeypatch):
    """The table1 notebook's `fields` reach the methods that declare them (and no other row); a field none of the added
    methods declares, or one given as a notebook parameter of its own, is one line."""
    from semifl_core.methods import Field
    from semifl_core.report import configs
    from semifl_core.report.runs import INJECTED, check_injected
    register(Method("toy-field", "Toy-Field", variant_of=methods.SEMIFL, client_loss=lambda cfg, base: base,
                    fields={"toy_mu": Field(0.5)}))
    try:
        cfgs = configs.table1_configs("smoke", "fashionmnist", 100, methods=["toy-field"], fields={"toy_mu": 0.25})
        toy = [c for label, c in cfgs.items() if label.startswith("Toy-Field")]
        assert len(toy) == 4 and all(c.toy_mu == 0.25 for c in toy)
        assert all(c.algorithm != "toy-field" for label, c in cfgs.items() if not label.startswith("Toy-Field"))
        with pytest.raises(ConfigError, match=r"^fields: 'prox_mu' is a field of none of the methods added"):
            configs.table1_configs("smoke", "fashionmnist", 100, methods=["toy-field"], fields={"prox_mu": 0.1})
        with pytest.raises(ConfigError, match=r"^notebook parameter 'toy_mu' is a field of toy-field: give it in "
                                              r"`fields`"):
            check_injected(["methods = []\nfields = {}\n", f"{INJECTED}toy_mu = 0.25\n"])
    finally:
        METHODS.pop("toy-field", None)
