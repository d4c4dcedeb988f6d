"""The one metered model call (`calls.metered`), the one rule for which ledgers a call charges
(`calls.ledgers`) and the journal of model calls (`calls.journal`).

Every model call of a run goes through `metered_call`: a session's turn, a harness's request,
a summary, a reflection, the rubric judge, and a user's context processor
(`Surroundings.ask`). Nothing else calls a model's `complete` or reserves a call.
"""
