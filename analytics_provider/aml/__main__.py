"""``python -m analytics_provider.aml lint PATH...``."""

from __future__ import annotations

import sys

from analytics_provider.aml.cli import main

if __name__ == "__main__":
    sys.exit(main())
