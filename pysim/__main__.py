"""Command line: `python -m pysim NAME [ARG] [--json] [--set key=value ...] [--actions a,b,...]`.

NAME is a simulation of pysim/registry.py, with hyphens (`python -m pysim --help` lists
them). Without `--json` it prints a readable summary; with it, the full view model the
widget draws. `--actions` is for the simulations that take them (the block manager's
admit and gen, the exercise's run and check), comma-separated, or as a JSON list for
actions that are objects (`--actions '[{"sweep_index": 3}]'`, a sweep's points). `--policy-file FILE` reads a scheduling
policy written in Python into the `policy_code` setting (`policies`, `puzzle`). A
simulation may take one setting as a plain argument (`python -m pysim puzzle NAME`);
`--list` prints that setting's choices, one a line.
Bad settings exit with status 2 and one line naming the field; so does a reader's policy
that fails. A failed puzzle exits with status 1.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys

from pysim.bridge import run, simulations
from pysim.config import ConfigError, check_json_depth

MAX_FILE_BYTES = 1_000_000  # a policy file larger than this is refused before reading it


def _read_policy(path: str) -> str:
    try:
        with open(path, "rb") as f:
            raw = f.read(MAX_FILE_BYTES + 1)
    except OSError as exc:
        raise ConfigError("policy_code", f"cannot read {path[:60]}: {exc.strerror or exc}") from None
    if len(raw) > MAX_FILE_BYTES:
        raise ConfigError("policy_code", f"{path[:60]} is larger than {MAX_FILE_BYTES:,} bytes")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        raise ConfigError("policy_code", f"{path[:60]} is not UTF-8 text") from None


def _actions(text: str) -> list:
    """`--actions`: a JSON list (actions that are objects), else names separated by commas."""
    if not text.lstrip().startswith("["):
        return [a.strip() for a in text.split(",") if a.strip()]
    check_json_depth(text, "actions")
    try:
        return json.loads(text)
    except ValueError as exc:
        raise ConfigError("actions", f"not a valid JSON list ({str(exc)[:80]})") from None


def main(argv: list[str] | None = None) -> int:
    sims = simulations()
    parser = argparse.ArgumentParser(prog="python -m pysim", description=__doc__.splitlines()[0])
    parser.add_argument("name", help="simulation: " + ", ".join(n.replace("_", "-") for n in sorted(sims)))
    parser.add_argument("argument", nargs="?", default=None,
                        help="a plain argument, for the simulations that take one (puzzle: its name)")
    parser.add_argument("--json", action="store_true", help="print the full view model as JSON")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="change one setting (repeatable)")
    parser.add_argument("--actions", default=None, metavar="A,B,...",
                        help="comma-separated actions, for step-by-step simulations, or a JSON list "
                             "of them (a sweep's: '[{\"sweep_index\": 3}]')")
    parser.add_argument("--policy-file", default=None, metavar="FILE",
                        help="a scheduling policy in Python (order, optionally victim): policies, puzzle")
    parser.add_argument("--list", action="store_true",
                        help="list the choices of the plain argument (puzzle: the puzzles), one a line")
    args = parser.parse_args(argv)
    name = args.name.replace("-", "_")
    try:
        sim = sims.get(name)
        takes = sim.cli_argument if sim else None
        if args.list:
            if not takes:
                raise ConfigError("list", f"{args.name[:40]} takes no plain argument to list")
            field = {f.name: f for f in dataclasses.fields(sim.config_cls)}[takes]
            print("\n".join(field.metadata["options"]))
            return 0
        config = {}
        for item in args.set:
            key, sep, value = item.partition("=")
            if not sep or not key.strip():
                raise ConfigError(item[:40], "expected KEY=VALUE")
            config[key.strip()] = value
        if args.argument is not None:
            if not takes:
                raise ConfigError("", f"{args.name[:40]} takes no plain argument (got {args.argument[:40]!r})")
            config[takes] = args.argument
        if args.policy_file is not None:
            config["policy_code"] = _read_policy(args.policy_file)
        payload = {"config": config}
        if args.actions is not None:
            payload["actions"] = _actions(args.actions)
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
    status = sims[name].exit_status(view) if sims[name].exit_status else 0
    if status == 2 and isinstance(view, dict) and view.get("error"):
        print(f"error: {view['error']}", file=sys.stderr)
    return status


if __name__ == "__main__":
    sys.exit(main())
