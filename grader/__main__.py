"""Entry point: `python -m grader`."""

import sys

from .cli import main

sys.exit(main())
