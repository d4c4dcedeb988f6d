"""The example flows' Python module is importable as they import it: `swarm_examples`."""

from __future__ import annotations

import sys

from .helpers import EXAMPLES

if str(EXAMPLES) not in sys.path:
    sys.path.insert(0, str(EXAMPLES))
