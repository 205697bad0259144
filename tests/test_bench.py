"""The benchmark times the same work for both engines: the same rounds with the same client samples."""
import numpy as np
import pytest

from semifl_core.config import profile


def _script(name: str):
    """scripts/<name>.py loaded as a module (scripts/ is not a package)."""
    import importlib.util
    from pathlib import Path
    spec = importlib.util.spec_from_file_location(name, Path(__file__).resolve().parents[1] / "scripts" / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


bench = _script("bench")


def test_bench_times_both_engines_on_identical_rounds(capsys):
    cfg = profile("smoke", threshold=0.0)   # every sample passes the threshold, so clients do train
    df = bench.bench(cfg, rounds=2, device="cpu", warmup=1)
    seq, vec = df[df.engine == "sequential"], df[df.engine == "vectorized"]
    assert list(seq["round"]) == list(vec["round"]) == [2, 3]
    assert list(seq.client_samples) == list(vec.client_samples) and seq.client_samples.min() > 0
    assert np.all(vec.client_img_per_s > 0) and np.all((df.outside_model_share >= 0) & (df.outside_model_share < 1))
    out = capsys.readouterr().out
    assert "vectorized vs sequential" in out and "1 untimed warm-up rounds" in out


# ---------------------------------------------------------------------- `scripts/bench.py gpu`
def test_gpu_profile_counts_ops_and_syncs_per_engine_and_prints_every_column():
    import torch

    gpu_profile, markdown, speed_variants = bench.gpu_profile, bench.markdown, bench.speed_variants
    cfg = profile("smoke")
    names = [n for n, _ in speed_variants(torch.device("cpu"))]
    keep = [n for n in names if n in ("baseline", "default") or "cuda_graphs" in n]
    rows = gpu_profile(cfg, "cpu", engines=("sequential", "vectorized"), variants=keep, client_epochs=0.5)
    assert [(r["engine"], r["speed"]) for r in rows] == [(e, n) for e in ("sequential", "vectorized") for n in keep]
    for r in rows:
        if "cuda_graphs" in r["speed"]:   # a switch this CPU cannot run: a row that says why, nothing measured
            assert r["note"].startswith("not run: cuda_graphs=True: needs a CUDA device") and "round_s" not in r
            continue
        assert r["threshold"] == 0.0 and r["label_ratio"] == 1.0 and r["client_samples"] > 0   # tau 0: all pass
        raw = r["profiled"]   # the profiled short client training: whole counts of ops and of client steps
        assert all(isinstance(v, int) and v > 0 for v in raw.values()), raw
        assert r["aten_ops_per_client_step"] > 0 and isinstance(r["syncs_per_round"], int) and r["syncs_per_round"] > 0
        assert r["client_img_s"] > 0 and 0 < r["peak_fraction"] < 1
        # E=0.5 measured, projected to the profile's 1: client training and augmentation count twice
        assert r["projected_round_s"] == pytest.approx(r["round_s"] + r["clients_s"] + r["augment_s"])
        assert r["round_s"] >= r["clients_s"] + (r["sbn_s"] or 0) + (r["eval_s"] or 0)
    table = markdown(rows, torch.device("cpu")).splitlines()
    header = [h.strip() for h in table[0].strip("|").split("|")]
    for column in ("engine", "speed", "round s", "client img/s", "of FP32 peak", "aten ops / client step (CPU: no "
                   "kernels)", "sBN s", "pseudo-label s", "clients s", "server s", "eval s",
                   "projected (label ratio 1)"):
        assert column in header
    assert any(h.startswith("host syncs / round") for h in header)
    assert len(table) == 2 + len(rows) and all(line.count("|") == len(header) + 1 for line in table)


def test_gpu_profile_past_its_deadline_measures_nothing_and_says_so():
    import time

    gpu_profile = bench.gpu_profile
    rows = gpu_profile(profile("smoke"), "cpu", engines=("vectorized",), deadline=time.monotonic())
    assert rows and all(r["note"].startswith("skipped: not enough time") and "round_s" not in r for r in rows)


def test_host_syncs_counts_the_host_reads_and_puts_tensor_back_as_it_was():
    import torch

    host_syncs = bench.host_syncs
    before = {name: torch.Tensor.__dict__.get(name) for name in ("item", "cpu", "tolist", "numpy")}
    t = torch.arange(3.0)
    with host_syncs(torch.device("cpu")) as n:
        t.sum().item(), t.cpu(), t.tolist(), t.numpy(), t + 1
    assert n[0] == 4
    assert {name: torch.Tensor.__dict__.get(name) for name in before} == before
    assert t.sum().item() == 3.0


def test_the_peak_table_knows_the_hopper_boards_by_their_names(monkeypatch):
    import torch

    for name, tflops in (("NVIDIA H100 80GB HBM3", 67), ("NVIDIA H100 PCIe", 51.2), ("NVIDIA H200", 67),
                         ("NVIDIA H200 NVL", 60)):
        monkeypatch.setattr(torch.cuda, "get_device_name", lambda device, n=name: n)
        peak, note = bench.peak_flops(torch.device("cuda"))
        assert peak == tflops * 1e12 and "datasheet" in note, name


def test_the_rounds_probe_times_every_variant_from_one_state_and_its_rows_feed_the_rule(tmp_path):
    """scripts/gpu_step_probe.py --rounds --smoke (the device call's tau0 part on a CPU): each variant's timed rounds
    start from the same state, so they train the same client samples; every row is printed as a ROW line as it is
    measured (what --choose reads, and what a time limit leaves), and the rule reads them."""
    import json
    import os
    import subprocess
    import sys
    from pathlib import Path
    repo = Path(__file__).resolve().parents[1]
    out = subprocess.run([sys.executable, str(repo / "scripts" / "gpu_step_probe.py"), "--rounds", "--smoke",
                          "--variants", "default,+wide_passes"], capture_output=True, text=True, timeout=300,
                         env={**os.environ, "OMP_NUM_THREADS": "1", "OUT": str(tmp_path)})
    assert out.returncode == 0, out.stderr[-3000:]
    rows = [json.loads(ln[4:]) for ln in out.stderr.splitlines() if ln.startswith("ROW ")]
    assert rows == json.loads((tmp_path / "rounds.json").read_text())
    assert [r["variant"] for r in rows] == ["default"] * 2 + ["+wide_passes"] * 2
    assert len({r["client_samples"] for r in rows}) == 1 and rows[0]["client_samples"] > 0
    assert all(r["round_s"] > 0 and r["time_clients"] > 0 for r in rows)
    variant, why = _script("gpu_step_probe").choose(rows, {})
    assert variant.startswith("default") and any(w.startswith("wide_passes: median") for w in why)


def test_the_per_client_graphs_probe_steps_each_client_as_the_vmap_step_does(tmp_path):
    """scripts/client_graphs_probe.py --smoke (streams and graphs are no-ops on a CPU): each client's own step, with
    its clipping and momentum SGD, leaves the weights the vmap step over the stacked clients leaves, to the float bound
    of one step; and the probe says so in one line."""
    import os
    import subprocess
    import sys
    from pathlib import Path
    repo = Path(__file__).resolve().parents[1]
    out = subprocess.run([sys.executable, str(repo / "scripts" / "client_graphs_probe.py"), "--smoke"],
                         capture_output=True, text=True, timeout=300,
                         env={**os.environ, "OMP_NUM_THREADS": "1", "OUT": str(tmp_path)})
    assert out.returncode == 0, out.stderr[-3000:]
    assert "per-client step equals the vmap step" in out.stdout and (tmp_path / "client-graphs.md").exists()


def test_the_switch_rule_turns_compile_on_only_under_its_share_with_its_tests_passing():
    """scripts/gpu_step_probe.py --choose, the rule that makes compile a default: median round <= 0.90 of the default's,
    and its CUDA tests finished without a failure; otherwise the default stays."""
    mod = _script("gpu_step_probe")
    rows = [{"variant": "default", "round_s": s} for s in (8.0, 8.2)]
    passed = {"compile": "2 passed in 40.0s"}
    fast = [{"variant": "+compile", "round_s": s} for s in (9.9, 7.1, 7.2)]   # the first round still compiles
    assert mod.choose(rows + fast, passed)[0] == "default+compile"             # median 7.2 / 8.1 = 0.89
    slow = [{"variant": "+compile", "round_s": s} for s in (7.4, 7.5)]
    assert mod.choose(rows + slow, passed)[0] == "default"                     # 0.92
    assert mod.choose(rows + fast, {"compile": "FAILED tests/x.py::y\n1 failed, 1 passed"})[0] == "default"
    assert mod.choose(rows + fast, {"compile": "...."})[0] == "default"        # cut by its time limit
    assert mod.choose(fast, passed)[0] == "default"                            # nothing to compare with


def test_the_phase_rule_turns_wide_passes_on_only_when_its_evaluation_phase_is_under_its_share():
    """scripts/gpu_step_probe.py --choose, the phase rule: wide_passes joins when its median time_sbn + time_eval is at
    most 0.80 of the default's and its median round no longer than the default's."""
    mod = _script("gpu_step_probe")
    rows = [{"variant": "default", "round_s": s, "time_sbn": 0.0, "time_eval": 0.66} for s in (5.0, 5.1)]
    wide = lambda ev, r: [{"variant": "+wide_passes", "round_s": r, "time_sbn": 0.0, "time_eval": ev}]  # noqa: E731
    assert mod.choose(rows + wide(0.50, 4.9), {})[0] == "default+wide_passes"   # 0.76
    assert mod.choose(rows + wide(0.55, 4.9), {})[0] == "default"               # 0.83
    assert mod.choose(rows + wide(0.50, 5.2), {})[0] == "default"               # its round longer
    assert mod.choose(rows, {})[0] == "default"                                 # not measured


def test_the_device_script_in_smoke_mode_prints_one_table_and_goes_on_without_fashion_mnist(tmp_path):
    """scripts/bench.py --smoke, with Fashion-MNIST hidden (as on a device machine it was not carried to): it says
    so in one line, skips that part, times the CNN part on random images of its shape, and prints one table with
    every part and the K-runs rows; $OUT gets the same table. Every part named (no per-part budget) and a deadline far
    off, so that a slow or loaded machine skips nothing; no compile on the CPU, no op count below zero."""
    import os
    import subprocess
    import sys
    from pathlib import Path
    repo = Path(__file__).resolve().parents[1]
    hide = ("import pathlib, runpy, sys; import semifl_core.data as d; "
            "d.DEBIAN_FASHION_MNIST = pathlib.Path(sys.argv[1]); sys.argv = [sys.argv[2], *sys.argv[3:]]; "
            "runpy.run_path(sys.argv[0], run_name='__main__')")
    out = subprocess.run([sys.executable, "-c", hide, str(tmp_path / "none"), str(repo / "scripts" / "bench.py"),
                          "--smoke", "--device", "cpu", "--data-root", str(tmp_path / "none"), "--out",
                          str(tmp_path / "out"), "--parts", "paper-cifar,grid,paper-fmnist,small", "--deadline", "540"],
                         capture_output=True, text=True, timeout=600,
                         env={**os.environ, "PYTHONPATH": str(repo), "OMP_NUM_THREADS": "1"})
    assert out.returncode == 0, out.stderr[-3000:]
    lines = out.stdout.strip().splitlines()
    table = [line for line in lines if line.startswith("|")]
    assert table and lines.index(table[0]) + len(table) == len(lines)   # one table, printed last
    assert (tmp_path / "out" / "bench_gpu.md").read_text().strip().endswith("\n".join(table))
    assert sum("Fashion-MNIST NOT FOUND" in line for line in out.stderr.splitlines()) == 1
    body = "\n".join(table)
    assert "skipped: Fashion-MNIST not found" in body and "random images of its shape" in body
    assert "smoke: smoke profile, random images" in body
    k_rows = [line for line in table if "K at once: smoke runs" in line]
    assert len(k_rows) == 2 and "K=1" in k_rows[0] and "K=2" in k_rows[1] and "runs/h" in k_rows[1]
    import json
    rows = [r for part in json.loads((tmp_path / "out" / "bench_gpu.json").read_text()).values() for r in part]
    every = [r for r in rows if r.get("speed") == "all"]
    assert every and all("but compile" in r["note"] for r in every)
    counted = [r for r in rows if "aten_ops_per_client_step" in r]
    assert counted and all(r["aten_ops_per_client_step"] > 0 for r in counted)


def test_the_engines_measurement_refuses_bad_rounds_in_one_line(capsys):
    assert bench.main(["engines", "--profile", "smoke", "--device", "cpu", "--rounds", "0"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--rounds 0" in err[0] and ">= 1" in err[0]
