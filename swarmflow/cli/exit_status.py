"""The exit statuses the `swarmflow` commands share (the rest are in `swarmflow.cli`'s own
description): 0 the command did what was asked; 1 it ran, and found problems (diagnostics, a
failed run, work left undone, a refusal); 2 a usage error, before anything ran."""

OK, PROBLEMS, USAGE = 0, 1, 2
