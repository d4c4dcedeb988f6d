"""Pure data and rules: ids, budget ledger, topology, session states, events, errors.

Nothing in this package performs I/O or imports another swarmflow layer.
"""
