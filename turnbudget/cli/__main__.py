"""``python -m turnbudget.cli``: the ``turnbudget`` command line."""

from __future__ import annotations

import sys

try:  # (Ctrl-C while the library is imported: one line, as in the command itself)
    from turnbudget.cli import main
except KeyboardInterrupt:
    print("turnbudget: interrupted", file=sys.stderr)
    sys.exit(130)  # (`turnbudget.cli.INTERRUPTED`)

if __name__ == "__main__":
    sys.exit(main())
