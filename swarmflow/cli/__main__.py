"""`python -m swarmflow.cli`."""

from swarmflow.cli import console_main

console_main()
