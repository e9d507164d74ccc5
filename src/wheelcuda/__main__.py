"""``python -m wheelcuda``."""

import sys

from .warm import main

sys.exit(main())
