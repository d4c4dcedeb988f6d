"""The flagship flow in Python and in `.swarm` records the same events with the same model."""

from __future__ import annotations

import pytest
from swarm_examples import Verdict, parallel_coder_arbiter

from swarmflow import run
from swarmflow.dsl import load_flow
from swarmflow.testing import ScriptedModel, Step

from .helpers import EXAMPLES, graph_nodes, normalised


def scripted(confidence: float, latency: float = 0.0) -> ScriptedModel:
    answer = f'{{"choice": 1, "confidence": {confidence}, "reason": "smallest change"}}'
    return ScriptedModel(
        {
            "coder": [
                Step(f"candidate {i}: edited module_{i}.py, tests pass", latency=latency * i)
                for i in range(4)
            ],
            "reviewer": [f"review {i}: correct, small, well tested" for i in range(4)],
            "arbiter": [answer],  # told each review, asked once: one call (assert_complete)
        }
    )


async def run_both(confidence: float, latency: float = 0.0):
    dsl = load_flow(EXAMPLES / "parallel_coder_arbiter.swarm")
    human = [Verdict(choice=2, confidence=1.0, reason="a person chose")]
    a_model, b_model = scripted(confidence, latency), scripted(confidence, latency)
    a = await run(dsl, task="make the tests pass", model=a_model, human=list(human))
    b = await run(
        parallel_coder_arbiter, task="make the tests pass", model=b_model, human=list(human)
    )
    a_model.assert_complete()
    b_model.assert_complete()
    return a, b


@pytest.mark.parametrize(("confidence", "latency"), [(0.5, 0.0), (0.9, 0.0), (0.5, 0.01)])
async def test_python_and_dsl_record_the_same_events(confidence, latency):
    a, b = await run_both(confidence, latency)
    assert a.status == b.status == "ok"
    assert a.output == b.output
    assert normalised(a.events) == normalised(b.events)
    assert graph_nodes(a.events) == graph_nodes(b.events)
    key = [(e.type, e.agent, e.branch) for e in a.events]
    assert key == [(e.type, e.agent, e.branch) for e in b.events]
    asked = [e for e in a.events if e.type == "human_requested"]
    assert len(asked) == (1 if confidence < 0.7 else 0)
    for result in (a, b):  # the reviews reach the arbiter without a model call each
        told = [e for e in result.events if e.type == "session_told"]
        called = [e for e in result.events if e.type == "model_called" and e.agent == "arbiter"]
        assert (len(told), len(called)) == (4, 1)


async def test_the_twins_declare_the_same_team_and_budget():
    dsl = load_flow(EXAMPLES / "parallel_coder_arbiter.swarm")
    assert dsl.name == parallel_coder_arbiter.name
    assert dsl.team == parallel_coder_arbiter.team
    assert dsl.limits == parallel_coder_arbiter.limits
