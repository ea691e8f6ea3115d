"""Run one chain of Python blocks in this process (test_snippets.py starts it).

Reads ``[[path, line, code, raises], ...]`` as JSON on stdin and runs each block
in a fresh ``__main__`` module, as a user's script would (classes defined there
pickle by reference). Each block is compiled with its page as file name and its
lines numbered as in the page, so a traceback points at the page's own line.
"""

from __future__ import annotations

import json
import sys
import traceback
import types


def main() -> int:
    module = types.ModuleType("__main__")
    sys.modules["__main__"] = module
    for path, line, code, raises in json.load(sys.stdin):
        program = compile("\n" * (line - 1) + code, path, "exec")
        try:
            exec(program, module.__dict__)
        except BaseException as error:  # report every failure, SystemExit too, as the page's
            if raises and type(error).__name__ == raises:
                print(f"raised {raises} as the page says", file=sys.stderr)
                return 0
            traceback.print_exc()
            print(f"\nthe block at {path}:{line} failed", file=sys.stderr)
            return 1
        if raises:
            print(f"the block at {path}:{line} should raise {raises} and did not", file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
