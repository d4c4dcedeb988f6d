"""The team: four agents answering a question about a repository under AgentRadio's protocol.

agent1 is the assembler: it opens the threads and gates every phase (explore, divide, execute
with a worklog, review, submit) on everyone's approval. Every agent reads the repository
(`workspace="local"`: the run's `repo=`, used as it is) and talks on the run's board.
"""

from __future__ import annotations

from swarmflow import Agent, Team, flow, team

BOARD = ("create_thread", "send_message", "wait_for_mention")
READ = ("list_files", "search", "read_file")
MEMBERS = ("agent2", "agent3", "agent4")
ASSEMBLER = "agent1"

TEAM = Team(
    agents=[
        Agent(ASSEMBLER, card="assembler.md.j2", tools=[*READ, *BOARD, "submit"],
              workspace="local", max_steps=60),
        *(Agent(name, card="member.md.j2", tools=[*READ, *BOARD], workspace="local",
                max_steps=40) for name in MEMBERS),
    ],
    # Everyone reaches everyone: the protocol is a conversation of four.
    edges=[(a, b) for a in (ASSEMBLER, *MEMBERS) for b in (ASSEMBLER, *MEMBERS) if a != b]
    + [(ASSEMBLER, "human")],
)  # fmt: skip


@flow(team=TEAM, budget={"tokens": 2_000_000, "calls": 400})
async def repo_qa(question: str, listen: str = "passive") -> str:
    """The team's answer to `question` (the assembler's submission)."""
    result = await team(question, lead=ASSEMBLER, listen=listen)  # type: ignore[arg-type]
    return result.answer
