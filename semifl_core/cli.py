"""Command line: `semifl run`, `semifl profiles`, `semifl runs`, `semifl demo`, `semifl bench`.

    semifl run --profile small --dataset fashionmnist --set partition=dir-0.3 seed=1
"""
from __future__ import annotations

import argparse
import os
import sys

from .config import PROFILES, ConfigError, parse_value, profile, profiles_table
from .data import DataError
from .results import ResultsError
from .run import TrainingError


def parse_sets(items: list[str]) -> dict:
    out = {}
    for item in items:
        if "=" not in item:
            raise ConfigError(f"--set {item!r}: expected NAME=VALUE")
        name, text = item.split("=", 1)
        out[name.strip()] = parse_value(name.strip(), text.strip())
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="semifl", description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="cmd", required=True)

    def common(sp):
        sp.add_argument("--profile", default="small", help=f"one of {', '.join(PROFILES)}")
        sp.add_argument("--dataset", default=None)
        sp.add_argument("--algorithm", default=None)
        sp.add_argument("--set", nargs="*", default=[], metavar="NAME=VALUE", help="override config fields")
        sp.add_argument("--results-dir", default="results")
        sp.add_argument("--data-root", default=None, help="default: $SEMIFL_DATA or ./data")
        sp.add_argument("--device", default="auto")

    r = sub.add_parser("run", help="train one configuration (reuses or resumes its results)")
    common(r)
    r.add_argument("--checkpoint-every", type=int, default=10)
    d = sub.add_parser("demo", help="SemiFL and Partially Supervised on the small profile")
    common(d)
    sub.add_parser("profiles", help="print the profiles as a table")
    ls = sub.add_parser("runs", help="list runs and their state")
    ls.add_argument("--results-dir", default="results")
    ls.add_argument("--clean", action="store_true", help="remove incomplete and corrupt runs")
    b = sub.add_parser("bench", help="time the sequential and vectorized engines on the same rounds")
    common(b)
    b.add_argument("--rounds", type=int, default=2, help="timed rounds per engine")
    b.add_argument("--warmup", type=int, default=5, help="untimed rounds before timing (pseudo-labels appear)")
    b.add_argument("--synthetic-shape", default=None, help="e.g. 3x32x32: random data of this shape if absent")
    args = p.parse_args(argv)

    try:
        if args.cmd == "profiles":
            import pandas as pd
            with pd.option_context("display.max_rows", 200, "display.width", 200):
                print(profiles_table())
            return 0
        if args.cmd == "runs":
            from .results import list_runs, remove_incomplete
            if args.clean:
                for name in remove_incomplete(args.results_dir):
                    print(f"removed {name}")
            import pandas as pd
            with pd.option_context("display.max_rows", 500, "display.width", 200):
                print(list_runs(args.results_dir).to_string(index=False))
            return 0
        overrides = parse_sets(args.set)
        if args.algorithm:
            overrides["algorithm"] = args.algorithm
        if args.cmd == "bench":
            from .bench import bench
            bench(profile(args.profile, args.dataset, **overrides), args.rounds, args.device, args.data_root,
                  args.synthetic_shape, args.warmup)
            return 0
        from .run import run

        if args.cmd == "run":
            cfg = profile(args.profile, args.dataset, **overrides)
            s = run(cfg, args.results_dir, args.device, args.data_root, checkpoint_every=args.checkpoint_every)
            print(_line(cfg.algorithm, s))
            return 0
        if args.cmd == "demo":
            lines = []
            for alg in ("semifl", "partially-supervised"):
                cfg = profile(args.profile, args.dataset, **{**overrides, "algorithm": alg})
                s = run(cfg, args.results_dir, args.device, args.data_root)
                lines.append(_line(alg, s))
            print(f"\nprofile {args.profile}, dataset {cfg.dataset}, N_S={cfg.num_supervised}, {cfg.partition}, "
                  f"{cfg.rounds} rounds")
            print("\n".join(lines))
            return 0
    except (ConfigError, DataError, ResultsError) as err:
        print(f"semifl: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt as err:
        print(f"semifl: interrupted{': ' + str(err) if str(err) else ''}", file=sys.stderr)
        return 130
    except TrainingError as err:
        print(f"semifl: {err}", file=sys.stderr)
        return 1
    return 1


def _line(alg: str, s: dict) -> str:
    reused = f" (reused: trained by the {s.get('engine')} engine)" if s.get("reused") else f" ({s['wall_time_s']:.0f} s)"
    return (f"{alg:>22}: final-round accuracy {s['final_acc']:.2f}%, best round {s['best_round']} "
            f"{s['best_acc']:.2f}%{reused} -> {s['path']}")


if __name__ == "__main__":
    sys.exit(main())
