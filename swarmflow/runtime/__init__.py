"""Sessions, the scheduler, the run context, rails and human channels."""
