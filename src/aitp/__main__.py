"""`python -m aitp`: the `aitp` command, reached from the interpreter that runs it (no PATH involved)."""

import sys

from aitp.cli import main

sys.exit(main())
