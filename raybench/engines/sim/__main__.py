"""`python -m raybench.engines.sim`: run the simulated engine server."""

from __future__ import annotations

import sys

from raybench.engines.sim.server import main

if __name__ == "__main__":
    sys.exit(main())
