"""Command line: `python -m pysim NAME [--json] [--set key=value ...] [--actions a,b,...]`.

NAME is a simulation of pysim/registry.py, with hyphens (`python -m pysim --help` lists
them). Without `--json` it prints a readable summary; with it, the full view model the
widget draws. `--actions` is for the simulations that take them (the block manager's
admit and gen, the exercise's run and check).
Bad settings exit with status 2 and one line naming the field.
"""

from __future__ import annotations

import argparse
import json
import sys

from .bridge import run, simulations
from .config import ConfigError


def main(argv: list[str] | None = None) -> int:
    sims = simulations()
    parser = argparse.ArgumentParser(prog="python -m pysim", description=__doc__.splitlines()[0])
    parser.add_argument("name", help="simulation: " + ", ".join(n.replace("_", "-") for n in sorted(sims)))
    parser.add_argument("--json", action="store_true", help="print the full view model as JSON")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="change one setting (repeatable)")
    parser.add_argument("--actions", default=None, metavar="A,B,...",
                        help="comma-separated actions, for step-by-step simulations")
    args = parser.parse_args(argv)
    name = args.name.replace("-", "_")
    try:
        config = {}
        for item in args.set:
            key, sep, value = item.partition("=")
            if not sep or not key.strip():
                raise ConfigError(item[:40], "expected KEY=VALUE")
            config[key.strip()] = value
        payload = {"config": config}
        if args.actions is not None:
            payload["actions"] = [a.strip() for a in args.actions.split(",") if a.strip()]
        view = run(name, payload, from_text=True)
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.json:
        json.dump(view, sys.stdout, indent=1 if len(json.dumps(view)) < 20000 else None)
        print()
    else:
        text = sims[name].text
        print(text(view) if text else json.dumps(view, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
