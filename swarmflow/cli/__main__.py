"""`python -m swarmflow.cli`."""

import sys

from swarmflow.cli import main

sys.exit(main())
