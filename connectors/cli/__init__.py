"""The `temper` command: `app.py` holds the global options, `init` and `doctor`; every other
command group has a module of its own here, named after it (`temper learn` -> learn.py,
`temper memory` -> memory.py, `temper daemon` / `status` / `pairing` -> daemon.py)."""

from connectors.cli.app import app

__all__ = ["app"]
