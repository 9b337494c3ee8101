"""`python -m aitp`: the `aitp` command, reached from the interpreter that runs it (no PATH involved)."""

import sys

from aitp.command import main

sys.exit(main())
