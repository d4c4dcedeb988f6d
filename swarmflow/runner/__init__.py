"""The run lifecycle: `run` and `run_sync`, the one composition root, results, failures, live
streams.
"""
