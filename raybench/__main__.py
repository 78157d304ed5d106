"""`python -m raybench`: the same command line as the `raybench` script."""

import sys

from raybench.cli import main

sys.exit(main())
