"""`python -m sitebuild`: the site's two builds (README, "Deploying") in one process.

The download first (mkdocs-offline.yml: site-offline/ and its zip), then the hosted
site (mkdocs.yml: site/, which copies that zip in), each exactly as `mkdocs build
--strict -f FILE` makes it. One process, because the second build then keeps the pysim
the first imported (`prerender.fresh_import`: nothing on disk changed), and with it the
figures the first computed: the serving lab's sweeps and fit, and the cluster's runs,
are seconds of work that `make test` would otherwise pay twice.
"""

from __future__ import annotations

import sys

import click
from mkdocs.__main__ import cli

CONFIGS = ("mkdocs-offline.yml", "mkdocs.yml")

if __name__ == "__main__":
    for config in CONFIGS:
        try:
            cli(["build", "--strict", "-f", config], standalone_mode=False)
        except click.ClickException as err:  # "Aborted with 1 warning in strict mode!", as mkdocs says it
            err.show()
            sys.exit(err.exit_code)
