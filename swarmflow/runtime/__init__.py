"""The kernel: what a run is given and what it holds, the run graph, background streams, rails and
flows.
"""
