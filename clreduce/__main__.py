"""``python -m clreduce`` runs the ``clreduce`` command (clreduce/cli.py)."""

import sys

from .cli import main

if __name__ == "__main__":
    sys.exit(main())
