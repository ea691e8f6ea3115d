"""``python -m turnbudget.cli``: the ``turnbudget`` command line."""

from __future__ import annotations

import sys

from turnbudget.cli import main

if __name__ == "__main__":
    sys.exit(main())
