"""The built-in levels, registered in firing order: the lossless and deterministic ones
first, the model-written summary before anything is dropped, the last resort last.

| priority | level | what it keeps |
|---|---|---|
| 800 | `collapse_loops` | the first of each run of identical calls and results, with a count |
| 700 | `offload` | a note naming the file that holds a large older observation, a preview |
| 600 | `reduce_structure` | a diff's headers and changed lines, a log's failures, JSON's shape |
| 500 | `elide_observations` | a one-line note per older observation (an offload keeps its file) |
| 400 | `summarise` | a model's summary of the older turns (decisions, facts, files, questions) |
| 300 | `drop_oldest` | the task, a summary, the newer turns |
| 200 | `compact_session` | the task, one note (summaries, calls made, files named), the last turn |
| 100 | `cut_observations` | the start of the largest observations, the whole saved to a file |
"""

from __future__ import annotations

from swarmflow.context.compaction import compact_session, cut_observations, drop_oldest
from swarmflow.context.levels import elide_observations, reduce_structure
from swarmflow.context.loops import collapse_loops
from swarmflow.context.offload import offload
from swarmflow.context.registry import PROCESSORS
from swarmflow.context.summary import summarise

BUILT_IN = (
    ("collapse_loops", collapse_loops, 800),
    ("offload", offload, 700),
    ("reduce_structure", reduce_structure, 600),
    ("elide_observations", elide_observations, 500),
    ("summarise", summarise, 400),
    ("drop_oldest", drop_oldest, 300),
    ("compact_session", compact_session, 200),
    ("cut_observations", cut_observations, 100),
)

for _name, _fn, _priority in BUILT_IN:
    PROCESSORS.register(_name, _fn, priority=_priority)
