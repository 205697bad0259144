"""The command lines' shared parsing (`semifl`, scripts/bench.py, the Flower apps): an argparse that reports a usage
error as one line, and `--set NAME=VALUE` overrides as typed config fields."""
from __future__ import annotations

import argparse

from .config import ConfigError, parse_value


class Parser(argparse.ArgumentParser):
    """argparse, with a usage error reported like every other error: one line on stderr, exit code 2."""

    def error(self, message):
        self.exit(2, f"semifl: {message} (see {self.prog} --help)\n")


def parse_sets(items: list[str]) -> dict:
    """`--set NAME=VALUE ...` as typed config overrides; a field given twice with different values is refused."""
    out = {}
    for item in items:
        name, eq, text = item.partition("=")
        name = name.strip()
        if not eq or not name:
            raise ConfigError(f"--set {item!r}: expected NAME=VALUE, e.g. --set rounds=5")
        value = parse_value(name, text.strip())
        if name in out and out[name] != value:
            raise ConfigError(f"--set {name} given twice ({out[name]!r} and {value!r}): give each field once")
        out[name] = value
    return out
