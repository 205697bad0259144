"""Command line: `semifl run`, `semifl profiles`, `semifl runs`, `semifl demo`, `semifl sweep`.

    semifl run --profile small --dataset fashionmnist --set partition=dir-0.3 seed=1
    semifl sweep table3 --profile small --seeds 0 1 2          (on Ray: the [distributed] extra)

torch and pandas are imported only by the commands that use them, so `semifl --help` and `semifl profiles` answer at
once. Every error is one line on stderr, `semifl: <what is wrong and what is allowed>`: exit code 2 for bad input or a
damaged results store, 1 when training fails or the results directory's disk fills, 130 when interrupted.
"""
from __future__ import annotations

import json
import os
import sys

from .argv import Parser, parse_sets
from .config import DATASETS, DEVICES, PROFILES, ConfigError, profile
from .methods import METHODS, PARTIALLY_SUPERVISED, SEMIFL, check_plugins


def build_parser() -> Parser:
    p = Parser(prog="semifl", description=__doc__.splitlines()[0],
               epilog="`semifl COMMAND --help` documents each command's options.")
    sub = p.add_subparsers(dest="cmd", required=True, metavar="COMMAND", parser_class=Parser)

    def common(sp, algorithm_help):
        sp.add_argument("--profile", default="small", metavar="NAME",
                        help=f"base configuration: {', '.join(PROFILES)} (default: %(default)s; `semifl profiles` "
                             "shows their values)")
        sp.add_argument("--dataset", default=None, metavar="NAME",
                        help=f"one of {', '.join(DATASETS)} (default: the profile's: paper cifar10, small and long "
                             "fashionmnist, smoke synthetic)")
        sp.add_argument("--algorithm", default=None, metavar="NAME", help=algorithm_help)
        sp.add_argument("--set", action="extend", nargs="+", default=[], metavar="NAME=VALUE",
                        help="override config fields, e.g. --set partition=dir-0.3 seed=1 (repeatable; every one "
                             "counts; a field given twice is refused). Fields and defaults: `semifl profiles`; "
                             "partition is iid, non-iid-l-K or dir-ALPHA; seed is 0 to 2**32-1")
        sp.add_argument("--results-dir", default="results", metavar="DIR",
                        help="where runs are stored, one directory each (default: %(default)s)")
        sp.add_argument("--data-root", default=None, metavar="DIR",
                        help="where datasets live (default: $SEMIFL_DATA, else ./data; Fashion-MNIST is also read "
                             "from /usr/share/datasets/fashion-mnist); SEMIFL_OFFLINE=1 never downloads")
        sp.add_argument("--device", default="auto",
                        help=f"one of {DEVICES} (default: %(default)s = a CUDA GPU if torch sees one, else cpu)")

    r = sub.add_parser("run", help="train one configuration (reuses or resumes its results)",
                       description="Train one configuration. A complete run in --results-dir is reused, an "
                                   "interrupted one resumed from its checkpoint; a run that another process is "
                                   "training is waited for.")
    common(r, f"one of {', '.join(METHODS)} (default: {SEMIFL})")
    r.add_argument("--checkpoint-every", type=int, default=10, metavar="N",
                   help="rounds between checkpoints, an integer >= 1 (default: %(default)s); Ctrl-C or SIGTERM "
                        "also checkpoints after the current round")
    d = sub.add_parser("demo", help="an algorithm and Partially Supervised on one profile",
                       description="Run --algorithm and its baseline, Partially Supervised (the server's labels "
                                   "only), and print both accuracies.")
    common(d, f"one of {', '.join(a for a in METHODS if a != PARTIALLY_SUPERVISED)} (default: {SEMIFL})")
    sub.add_parser("profiles", help="print the profiles' values side by side")
    ls = sub.add_parser("runs", help="list runs and their state (complete / incomplete / corrupt)")
    ls.add_argument("--results-dir", default="results", metavar="DIR", help="default: %(default)s")
    ls.add_argument("--clean", action="store_true",
                    help="remove incomplete and corrupt runs first (never a run that a process holds)")
    sw = sub.add_parser("sweep", help="run a notebook's grid of runs on Ray (the [distributed] extra)",
                        description="Run every configuration of a notebook's grid (GRID) for every seed on Ray, one "
                                    "task a run: complete runs in --results-dir are reused, interrupted ones resumed; "
                                    "a run that another process trains is left to it and its result reused. A sweep "
                                    "that dies is finished by the same command.")
    sw.add_argument("grid", metavar="GRID", help=f"one of {', '.join(GRID_NAMES)}")
    sw.add_argument("--profile", default="small", metavar="NAME",
                    help=f"one of {', '.join(PROFILES)} (default: %(default)s)")
    sw.add_argument("--dataset", default=None, metavar="NAME",
                    help="one dataset of the grid (default: every (dataset, N_S) pair of the profile)")
    sw.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2], metavar="S",
                    help="seeds of every run (default: 0 1 2)")
    sw.add_argument("--rounds", type=int, default=None, metavar="N", help="rounds (default: the profile's)")
    sw.add_argument("--address", default=None, metavar="ADDR",
                    help="Ray cluster, e.g. ray://HEAD:10001 or HEAD:6379 (default: $RAY_ADDRESS, else a cluster "
                         "`ray start` began here, else a new local instance)")
    sw.add_argument("--gpus-per-run", type=float, default=None, metavar="F",
                    help="GPUs a run: 1, or a fraction such as 0.5 to share one (default: 1/K for K of "
                         "--runs-per-gpu where the cluster has GPUs, else 0)")
    sw.add_argument("--runs-per-gpu", type=int, default=None, metavar="K",
                    help="runs a GPU trains at once, i.e. --gpus-per-run 1/K (default: $SEMIFL_RUNS_PER_GPU, else "
                         "4 on a GPU, fewer if 4 would not fit, measured in BENCHMARKS.md; 1 on a CPU)")
    sw.add_argument("--results-dir", default="results", metavar="DIR",
                    help="where runs are stored, one directory each; on a cluster, a path every node sees "
                         "(default: %(default)s)")
    sw.add_argument("--data-root", default=None, metavar="DIR", help="where datasets live (as for `semifl run`)")
    sw.add_argument("--device", default="auto", help=f"one of {DEVICES} (default: %(default)s)")
    sw.add_argument("--checkpoint-every", type=int, default=10, metavar="N",
                    help="rounds between checkpoints (default: %(default)s)")
    return p


GRID_NAMES = ("table1", "table2", "table3", "table5", "figure2", "scale", "diagnosis", "split", "feddure")


def main(argv=None) -> int:
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as done:   # --help, or a usage error already printed
        return done.code or 0
    try:
        return _command(args)
    except BrokenPipeError:   # `semifl runs | head`: the reader has gone, nothing to say
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    except KeyboardInterrupt as err:
        print(f"semifl: interrupted{': ' + str(err) if str(err) else ''}", file=sys.stderr)
        return 130
    except Exception as err:
        code = _exit_code(err)
        if code is None:
            raise
        print(f"semifl: {' '.join(str(err).split())}", file=sys.stderr)
        return code


def _exit_code(err: Exception) -> int | None:
    """main's exit code for err (module docstring); None for a bug, shown in full."""
    if isinstance(err, ConfigError):
        return 2
    if isinstance(err, OSError):   # disk full, permission denied: the message names the file
        return 1
    from .data import DataError       # imported only now: these modules load torch
    from .results import DiskError, ResultsError
    from .run import TrainingError
    if isinstance(err, (TrainingError, DiskError)):
        return 1
    return 2 if isinstance(err, (DataError, ResultsError)) else None


def _command(args) -> int:
    check_plugins()   # a SEMIFL_METHODS module that failed to load: its one line (--help has already worked)
    if args.cmd == "profiles":
        print(profiles_text())
        return 0
    if args.cmd == "runs":
        return _runs(args.results_dir, args.clean)
    if args.cmd == "sweep":
        return _sweep(args)
    overrides = parse_sets(args.set)
    for name in ("dataset", "algorithm"):
        flag = getattr(args, name)
        if flag is not None and overrides.get(name, flag) != flag:
            raise ConfigError(f"--{name} {flag} and --set {name}={overrides[name]} disagree: give one")
        if flag is not None:
            overrides[name] = flag
    dataset = overrides.pop("dataset", None)
    if args.cmd == "run":
        cfg = profile(args.profile, dataset, **overrides)
        from .run import run
        print(_line(cfg.algorithm, run(cfg, args.results_dir, args.device, args.data_root,
                                       checkpoint_every=args.checkpoint_every)))
        return 0
    # demo: the algorithm and its baseline
    algorithm = overrides.pop("algorithm", SEMIFL)
    if algorithm == PARTIALLY_SUPERVISED:
        raise ConfigError(f"--algorithm {algorithm}: the demo runs it anyway, as the baseline; "
                          f"choose one of {', '.join(a for a in METHODS if a != algorithm)}")
    cfgs = [profile(args.profile, dataset, **{**overrides, "algorithm": a}) for a in (algorithm, PARTIALLY_SUPERVISED)]
    from .run import run
    lines = [_line(c.algorithm, run(c, args.results_dir, args.device, args.data_root)) for c in cfgs]
    cfg = cfgs[0]
    print(f"\nprofile {args.profile}, dataset {cfg.dataset}, N_S={cfg.num_supervised}, {cfg.partition}, "
          f"{cfg.rounds} rounds")
    print("\n".join(lines))
    print(_committed(cfgs))
    return 0


def _committed(cfgs, seeds=(0, 1, 2)) -> str:
    """The same configs' runs in the repository's committed results/ (seeds 0-2), mean (std) n, to compare with."""
    from .report import mean_std, repo_path, shown
    from .results import open_run
    where = repo_path("results")
    out = [f"committed runs of the same configs in {shown(where)} (seeds {', '.join(map(str, seeds))}; final round, "
           "best round):"]
    for cfg in cfgs:
        found = [open_run(where, cfg.replace(seed=s)) for s in seeds]
        done = [i.summary for i in found if i.state == "complete"]
        out.append(f"{cfg.algorithm:>22}: " + (f"{mean_std([d['final_acc'] for d in done])}, "
                                               f"{mean_std([d['best_acc'] for d in done])}" if done else "none"))
    return "\n".join(out)


def _sweep(args) -> int:
    """`semifl sweep GRID`: the grid's runs on Ray; one line a run, then the count; exit 1 if any run failed."""
    if args.grid not in GRID_NAMES:
        import difflib
        close = difflib.get_close_matches(args.grid, GRID_NAMES, n=1)
        raise ConfigError(f"sweep {args.grid!r}: unknown grid; allowed are {', '.join(GRID_NAMES)}"
                          + (f" (did you mean {close[0]!r}?)" if close else ""))
    if args.rounds is not None and args.rounds < 1 or args.checkpoint_every < 1:
        raise ConfigError(f"--rounds {args.rounds} --checkpoint-every {args.checkpoint_every}: both must be >= 1")
    try:
        import ray  # noqa: F401  (only to say now, before anything is built, that it is missing)
    except ImportError:
        from .sweep import NEEDS_RAY
        raise ConfigError(NEEDS_RAY) from None
    from .report.configs import grid_configs
    from .sweep import sweep
    configs = grid_configs(args.grid, args.profile, args.dataset, args.rounds)
    jobs = [(f"{label} (seed {s})", cfg.replace(seed=s)) for label, cfg in configs.items() for s in args.seeds]
    out = sweep([c for _, c in jobs], args.results_dir, names=[n for n, _ in jobs], address=args.address,
                num_gpus=args.gpus_per_run, device=args.device, data_root=args.data_root,
                checkpoint_every=args.checkpoint_every, runs_per_gpu=args.runs_per_gpu)
    width = max(len(n) for n, _ in jobs)
    for (name, _), s in zip(jobs, out.summaries):
        if s is not None:
            print(f"{name:<{width}}  {'reused ' if s['reused'] else 'trained'}  final {s['final_acc']:6.2f}%  "
                  f"best {s['best_acc']:6.2f}%  {s['path']}")
    print(f"{args.grid}, profile {args.profile}: {len(jobs)} runs, {out.trained} trained, {out.reused} reused, "
          f"{len(out.failures)} failed")
    return 1 if out.failures else 0   # the failed runs' lines: sweep printed them on stderr


def _unregistered(path) -> str:
    """Why a store's directory of an algorithm not registered here is no run, or ""."""
    try:
        algorithm = json.loads((path / "config.json").read_text())["config"]["algorithm"]
    except (OSError, ValueError, KeyError, TypeError):
        return ""
    return "" if algorithm in METHODS else (f" (a run of {algorithm!r}, not registered here: name its module in "
                                            "SEMIFL_METHODS)")


def _runs(results_dir, clean: bool) -> int:
    """`semifl runs [--clean]`: the runs and their state; what is not a run (results.is_run) is named and left alone."""
    from .report.confirmation import claims_file, plan_file, start_file
    from .results import list_runs, not_runs, remove_incomplete, removable, store_root
    where = store_root(results_dir).resolve()
    own = {f(results_dir).resolve() for f in (plan_file, start_file)} | {claims_file("x", results_dir).parent.resolve()}
    for other in (p for p in not_runs(results_dir) if p.resolve() not in own):   # the package's own: not listed
        print(f"not a run, left alone: {other.name}{'/' if other.is_dir() else ''}{_unregistered(other)}")
    if clean:
        plan = removable(results_dir)
        print(f"--clean: {len(plan)} incomplete or corrupt run(s) to remove" + (":" if plan else ""))
        for path in plan:
            print(f"  {path.name}")
        skipped = []
        for name in remove_incomplete(results_dir, skipped=skipped, only=plan):
            print(f"removed {name}")
        for what in skipped:
            print(f"skipped {what}")
    table = list_runs(results_dir)
    if table.empty:
        print(f"no runs in {where}" + ("" if where.exists() else " (no such directory)"))
        return 0
    import pandas as pd
    table = table.drop(columns=[c for c in ("reason", "held_by") if not table[c].fillna("").astype(bool).any()])
    with pd.option_context("display.max_rows", 500, "display.width", 200):
        print(table.to_string(index=False, float_format=lambda v: f"{v:.2f}"))
    return 0


def profiles_text() -> str:
    """The profiles side by side (the paper profile for CIFAR-10, N_S=250), as plain text without pandas."""
    values = {name: profile(name).to_dict() for name in PROFILES}
    rows = [["", *PROFILES]] + [[f, *(str(values[p][f]) for p in PROFILES)] for f in values[PROFILES[0]]]
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return "\n".join("  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(row, widths)))
                     for row in rows)


def _line(alg: str, s: dict) -> str:
    how = (f"reused: trained on {s.get('device')} by the {s.get('engine')} engine" if s.get("reused")
           else f"{s['wall_time_s']:.0f} s on {s.get('device')}, {s.get('engine')} engine")
    return (f"{alg:>22}: final-round accuracy {s['final_acc']:.2f}%, best round {s['best_round']} "
            f"{s['best_acc']:.2f}% ({how}) -> {s['path']}")


if __name__ == "__main__":
    sys.exit(main())
