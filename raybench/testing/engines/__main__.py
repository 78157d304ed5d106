"""`python -m raybench.testing.engines KIND ENGINE-ARGS...`: run the fake of engine KIND."""

from __future__ import annotations

import argparse
import asyncio
import sys

from raybench.testing.engines.cli import FAKE_KINDS, parse_engine_args
from raybench.testing.engines.server import serve


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in FAKE_KINDS:
        print(f"usage: python -m raybench.testing.engines {{{','.join(FAKE_KINDS)}}} ARGS...", file=sys.stderr)
        return 2
    try:
        config = parse_engine_args(argv[0], argv[1:])
    except argparse.ArgumentError as exc:
        print(f"{argv[0]}: error: {exc}", file=sys.stderr)
        return 2
    print(f"fake {config.kind}: argv {argv[1:]}", flush=True)
    asyncio.run(serve(config))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
