"""The run's message boards (AgentRadio): threads, messages and @mentions, checked against the
team.

A run has its own board (`board_for`, named "") and one board per `team(...)` call
(`RunBoards.open_team`, named after the call: `team[0]`, `parallel[1]/team[0]`), so two teams
in one run never see each other's threads or mentions. Three primitives reach a board as tools
(`create_thread`, `send_message`, `wait_for_mention`); sessions in passive mode drain their
mentions at each step boundary (`take_mentions`). The rules:

- a thread's creator must reach every participant it invites (`creator -> p` declared);
- a message reaches only the participants its sender has an edge to (the others are told
  nothing and a `board_refused` event records each one);
- every @mention of B needs the edge `sender -> B`, and B must take part in the thread; one
  refused mention refuses the whole message;
- the text goes through the run's one handoff check (`check_outgoing(..., via="board")`), so a
  product smuggled past an edge is refused as on every other route.

A refusal raises `ToolError` (the model reads why), is recorded as an event, and changes
nothing. Every change is an event naming its board, on disk before it is visible (the write
barrier), and a resumed run rebuilds each board from its own events (`teams.board_journal`).
Messages are numbered by one counter for all of a run's boards (`seq`): a thread's order is
the order of `seq`.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import anyio

from swarmflow.core.errors import ToolError, TopologyError
from swarmflow.core.ids import child_branch
from swarmflow.record.events import (
    BoardMessagePosted,
    BoardRefused,
    EventBase,
    MentionDelivered,
    ThreadCreated,
)
from swarmflow.record.journal import BoardFact
from swarmflow.runtime.context import RunContext, current_scope, current_session, maybe_run
from swarmflow.sessions.handoff import check_outgoing, given_to
from swarmflow.teams.board_journal import restore as restore_board
from swarmflow.teams.board_journal import wakeups
from swarmflow.teams.board_rules import (
    MAX_THREADS,
    agent_names,
    check_content,
    check_thread_name,
    check_timeout,
    shown,
    thread_key,
)
from swarmflow.teams.board_view import (
    BoardSnapshot,
    Mention,
    Post,
    Thread,
    render_mentions,
    render_snapshot,
    thread_view,
)

__all__ = ["RUN_BOARD", "Board", "BoardSnapshot", "Mention", "RunBoards", "board_for", "boards_of"]

RUN_BOARD = ""
"""The name of the run's own board (the one outside every team call)."""

_PREVIEW = 2_000


class _Refused(Exception):
    """A refusal inside the board, turned into an event and a `ToolError` at the surface."""

    def __init__(self, reason: str, *, route: str = "request", target: str = "", thread: str = ""):
        super().__init__(reason)
        self.reason, self.route, self.target, self.thread = reason, route, target, thread


class Board:
    """One board's threads, messages and undelivered mentions (implements `BoardPort`)."""

    def __init__(self, run: RunContext, family: RunBoards, name: str = RUN_BOARD) -> None:
        self.run = run
        self.family = family
        """The run's boards, this one among them (they number messages with one counter)."""
        self.name = name
        """`RUN_BOARD`, or the team call's (`team[0]`): recorded as `board` on its events."""
        self.threads: dict[str, Thread] = {}
        """By `thread_key` of the name."""
        self._pending: dict[str, deque[Mention]] = {}
        self._again: dict[str, deque[list[Mention]]] = {}
        """A resumed team's mentions that woke a role in an earlier process, by recipient, one
        group per wake-up: handed out again, in those groups and with no new event, so that
        the turns they woke the role for come back from the journal (`wake_again`)."""
        self._cut_off: dict[tuple[str, str, str, tuple[str, ...]], deque[Post]] = {}
        """An earlier process's posts whose call never finished, by what a repeat would send."""
        self._signals: dict[str, anyio.Event] = {}
        self._agents = frozenset(run.deps.team.names)

    @property
    def seq(self) -> int:
        """The last message number handed out (one counter for all of the run's boards)."""
        return self.family.seq

    # -- the three primitives -------------------------------------------------------------

    def create_thread(self, sender: str, name: str, participants: Sequence[str]) -> str:
        """Open thread `name` with `participants` (the sender always takes part)."""
        with self._refusals(sender):
            return self._create(sender, name, participants)

    def send_message(
        self, sender: str, thread: str, content: str, mentions: Sequence[str] = ()
    ) -> str:
        """Post `content` to `thread`, @mentioning `mentions`."""
        with self._refusals(sender):
            return self._send(sender, thread, content, mentions)

    async def wait_for_mention(self, agent: str, timeout: float | None) -> str:
        """Wait up to `timeout` seconds (None: no limit) for a mention of `agent`; returns every
        pending mention and a snapshot of the threads it takes part in."""
        with self._refusals(agent):
            self._check_agent(agent)
            seconds = check_timeout(timeout)
        with anyio.move_on_after(math.inf if seconds is None else seconds):
            await self.wait_pending(agent)
        mentions = self._drain(agent, "blocking")
        board = render_snapshot(self.snapshot(agent))
        if not mentions:
            return f"no mention within {seconds:g} s.\n\nThe board now:\n{board}"
        return f"{render_mentions(mentions)}\n\nThe board now:\n{board}"

    # -- passive awareness ------------------------------------------------------------------

    def take_mentions(self, agent: str) -> list[Mention]:
        """Drain `agent`'s undelivered mentions, in order, each recorded as delivered
        passively."""
        return self._drain(agent, "passive")

    def has_pending(self, agent: str) -> bool:
        return bool(self._again.get(agent) or self._pending.get(agent))

    async def wait_pending(self, agent: str) -> None:
        """Return once `agent` has an undelivered mention, without consuming it."""
        while not self.has_pending(agent):
            signal = self._signals.get(agent)
            if signal is None:
                signal = self._signals[agent] = anyio.Event()
            await signal.wait()

    def render_mentions(self, mentions: Sequence[Mention]) -> str:
        """The text a passive session is given at its next step boundary."""
        return render_mentions(mentions)

    def snapshot(self, agent: str | None = None) -> BoardSnapshot:
        """The threads `agent` takes part in, with the messages that reached it (None: all)."""
        threads = [
            thread_view(t, agent)
            for t in self.threads.values()
            if agent is None or agent in t.participants
        ]
        return BoardSnapshot(agent=agent, threads=threads)

    def pending(self, agent: str) -> list[Mention]:
        """`agent`'s undelivered mentions, in order (not consumed)."""
        again = self._again.get(agent)
        return list(again[0] if again else self._pending.get(agent, ()))

    # -- restoring (teams.board_journal) ------------------------------------------------------

    def adopt_thread(self, thread: Thread) -> None:
        self.threads[thread_key(thread.name)] = thread

    def adopt_post(self, post: Post, pending: Sequence[str], *, cut_off: bool = False) -> None:
        """Put back a journaled message; `pending`: mentioned agents it has not reached yet;
        `cut_off`: the call that posted it never finished, so its restart will post it again."""
        found = self.threads.get(thread_key(post.thread))
        if found is not None:
            found.posts.append(post)
        if cut_off:
            key = _repeat_key(post.sender, post.thread, post.content, post.mentions)
            self._cut_off.setdefault(key, deque()).append(post)
        self.family.seq = max(self.family.seq, post.seq)
        self.run.state.fingerprints.add(post.sender, post.content)
        for name in pending:
            self._queue(name, Mention(post.thread, post.sender, post.content, post.seq))

    def wake_again(self, groups: Sequence[tuple[str, Sequence[int]]]) -> None:
        """Hand out again, to a resumed team's roles, the mentions (by message number) that
        woke them in an earlier process: (recipient, the mentions of one wake-up)."""
        posts = {post.seq: post for thread in self.threads.values() for post in thread.posts}
        for recipient, seqs in groups:
            group = [_mention(posts[seq]) for seq in seqs if seq in posts]
            if group:
                self._again.setdefault(recipient, deque()).append(group)

    # -- creating and posting -------------------------------------------------------------

    def _create(self, sender: str, name: str, participants: Sequence[str]) -> str:
        self._check_agent(sender)
        name = check_thread_name(name)
        invited = agent_names(participants, what="participants")
        members = (sender, *(p for p in invited if p != sender))
        existing = self.threads.get(thread_key(name))
        if existing is not None:
            return self._existing(existing, sender, members)
        if len(self.threads) >= MAX_THREADS:
            raise _Refused(f"the board holds {MAX_THREADS} threads already; post to one of them")
        for member in members[1:]:
            self._check_invitation(sender, member, name)
        self._check_text(sender, name, members[1:])
        thread = Thread(name, sender, members)
        self.threads[thread_key(name)] = thread
        self._emit(ThreadCreated, sender, thread=name, creator=sender, participants=list(members))
        others = ", ".join(members[1:]) or "nobody else yet"
        return f"created thread #{name} with {others}"

    def _existing(self, thread: Thread, sender: str, members: tuple[str, ...]) -> str:
        """Opening a thread again is a no-op for its creator with the same participants (a
        restarted call does it); any other name clash is refused."""
        if thread.creator == sender and set(members) == set(thread.participants):
            return f"thread #{thread.name} already exists with {', '.join(thread.participants)}"
        raise _Refused(
            f"a thread named {shown(thread.name)} already exists (created by {thread.creator}; "
            f"participants {', '.join(thread.participants)}); pick another name",
            thread=thread.name,
        )

    def _check_invitation(self, sender: str, member: str, thread: str) -> None:
        if not self._is_agent(member):
            raise _Refused(self._unknown(member), route="invitation", target="", thread=thread)
        if not self.run.deps.team.declares(sender, member):
            raise _Refused(
                f"cannot invite {member}: the team declares no edge {sender} -> {member}",
                route="invitation",
                target=member,
                thread=thread,
            )

    def _send(self, sender: str, name: str, content: str, mentions: Sequence[str]) -> str:
        self._check_agent(sender)
        thread = self._thread_of(sender, name)
        content = check_content(content)
        named = agent_names(mentions, what="mentions")
        for target in named:
            self._check_mention(sender, target, thread)
        reached = tuple(p for p in thread.participants if p == sender or self._reaches(sender, p))
        self._check_text(sender, content, [p for p in reached if p != sender])
        repeat = self._cut_off.get(_repeat_key(sender, thread.name, content, named))
        if repeat:  # a restarted call posts again what its first run posted: it is there once
            return self._confirmation(repeat.popleft(), thread)
        self.family.seq += 1
        post = Post(self.family.seq, thread.name, sender, content, tuple(named), reached)
        thread.posts.append(post)
        self._remember(sender, content)
        scrubbed = self.run.deps.log.redactor.scrub(content)  # the whole message: `text + rest`
        self._emit(
            BoardMessagePosted,
            sender,
            thread=thread.name,
            sender=sender,
            text=scrubbed[:_PREVIEW],
            rest=scrubbed[_PREVIEW:],
            mentions=list(named),
            recipients=list(reached),
            message_seq=post.seq,
        )
        for target in named:
            self._queue(target, Mention(thread.name, sender, content, post.seq))
        return self._posted(post, thread)

    def _posted(self, post: Post, thread: Thread) -> str:
        """The confirmation; participants the sender has no edge to are named and recorded."""
        for target in thread.participants:
            if target not in post.recipients:
                reason = f"no edge {post.sender} -> {target}"
                self._emit(
                    BoardRefused,
                    post.sender,
                    route="message",
                    source=post.sender,
                    target=target,
                    thread=thread.name,
                    reason=reason,
                )
        return self._confirmation(post, thread)

    @staticmethod
    def _confirmation(post: Post, thread: Thread) -> str:
        """What the sender is told about its post."""
        missed = [p for p in thread.participants if p not in post.recipients]
        others = [p for p in post.recipients if p != post.sender]
        seen = ", ".join(others) or "you only"
        text = f"posted message {post.seq} to #{thread.name}; seen by {seen}"
        if post.mentions:
            text += f"; mentioned @{', @'.join(post.mentions)}"
        if missed:
            edges = ", ".join(f"{post.sender} -> {p}" for p in missed)
            text += f"; NOT delivered to {', '.join(missed)} (the team declares no edge {edges})"
        return text

    def _thread_of(self, sender: str, name: object) -> Thread:
        thread = self.threads.get(thread_key(check_thread_name(name)))
        if thread is None:
            mine = [f"#{t.name}" for t in self.threads.values() if sender in t.participants]
            raise _Refused(
                f"no thread named {shown(str(name))}; threads you take part in: "
                f"{', '.join(mine) or 'none (create one with create_thread)'}",
                thread=str(name)[:200],
            )
        if sender not in thread.participants:
            raise _Refused(
                f"you do not take part in #{thread.name} (participants: "
                f"{', '.join(thread.participants)}); only its creator can invite you",
                route="message",
                thread=thread.name,
            )
        return thread

    def _check_mention(self, sender: str, target: str, thread: Thread) -> None:
        if not self._is_agent(target):
            raise _Refused(self._unknown(target), route="mention", thread=thread.name)
        if not self.run.deps.team.declares(sender, target):
            raise _Refused(
                f"cannot mention @{target}: the team declares no edge {sender} -> {target} "
                "(nothing was posted)",
                route="mention",
                target=target,
                thread=thread.name,
            )
        if target not in thread.participants:
            raise _Refused(
                f"cannot mention @{target}: {target} does not take part in #{thread.name} "
                f"(participants: {', '.join(thread.participants)}; nothing was posted)",
                route="mention",
                target=target,
                thread=thread.name,
            )

    def _reaches(self, sender: str, target: str) -> bool:
        return self.run.deps.team.declares(sender, target)

    # -- delivery ---------------------------------------------------------------------------

    def _queue(self, agent: str, mention: Mention) -> None:
        self._pending.setdefault(agent, deque()).append(mention)
        signal = self._signals.pop(agent, None)
        if signal is not None:
            signal.set()

    def _drain(self, agent: str, mode: str) -> list[Mention]:
        again = self._again.get(agent)
        if again:  # delivered in an earlier process: on record already
            taken = again.popleft()
            if not again:
                del self._again[agent]
            return taken
        queue = self._pending.pop(agent, None)
        if not queue:
            return []
        taken = list(queue)
        for mention in taken:
            self._emit(
                MentionDelivered,
                agent,
                thread=mention.thread,
                sender=mention.sender,
                recipient=agent,
                message_seq=mention.seq,
                mode=mode,
            )
        return taken

    # -- checks and records -----------------------------------------------------------------

    def _check_agent(self, agent: str) -> None:
        if not isinstance(agent, str) or not self._is_agent(agent):
            raise _Refused(self._unknown(str(agent)))

    def _is_agent(self, name: str) -> bool:
        return name in self._agents

    def _unknown(self, name: str) -> str:
        names = ", ".join(self.run.deps.team.names)
        return f"no agent named {shown(name)} on this team (agents: {names})"

    def _check_text(self, sender: str, text: str, targets: Sequence[str]) -> None:
        """The one handoff check, for every agent the text reaches (raises TopologyError)."""
        for target in targets:
            check_outgoing(self.run, target, text, via="board", agent=sender)

    def _remember(self, sender: str, content: str) -> None:
        """What an agent posts is its product: relaying it further needs the edges."""
        session = current_session.get()
        given = given_to(session) if _is_session_of(session, sender) else ""  # type: ignore[arg-type]
        self.run.state.fingerprints.add(sender, content, given)

    def _emit(self, cls: type[EventBase], agent: str, **fields: Any) -> None:
        session = current_session.get()
        fields["agent"], fields["board"] = agent, self.name
        fields["session"] = getattr(session, "id", None) if _is_session_of(session, agent) else None
        fields["branch"] = current_scope().branch if maybe_run() is not None else ""
        self.run.deps.log.record(cls, fields)

    @contextmanager
    def _refusals(self, sender: str) -> Iterator[None]:
        """Turn a refusal into its event and a `ToolError` for the caller."""
        try:
            yield
        except _Refused as refused:
            self._emit(
                BoardRefused,
                str(sender),
                route=refused.route,
                source=str(sender),
                target=refused.target,
                thread=refused.thread,
                reason=refused.reason,
            )
            raise ToolError(f"refused: {refused.reason}") from None
        except ToolError as error:  # a malformed argument (board_rules)
            self._emit(
                BoardRefused, str(sender), route="request", source=str(sender), reason=error.message
            )
            raise ToolError(f"refused: {error.message}") from None
        except TopologyError as error:  # the handoff check recorded it already
            raise ToolError(f"refused: {error.message} (nothing was posted)") from None


def _mention(post: Post) -> Mention:
    return Mention(post.thread, post.sender, post.content, post.seq)


def _repeat_key(
    sender: str, thread: str, content: str, mentions: Sequence[str]
) -> tuple[str, str, str, tuple[str, ...]]:
    return sender, thread_key(thread), content, tuple(mentions)


def _is_session_of(session: object, agent: str) -> bool:
    declared = getattr(session, "agent", None)
    return getattr(declared, "name", None) == agent


class RunBoards:
    """A run's boards: its own and one per `team(...)` call, by name.

    A team call's board is named after the call: the branch it runs in and its index among
    the team calls of that branch (`team[0]`, `parallel[1]/team[0]`), the same on every run of
    the same flow, so a resumed run's team call gets back the board its first run had.
    """

    def __init__(self, run: RunContext) -> None:
        self.run = run
        self.seq = 0
        """The last message number handed out, on any of the boards."""
        self.boards: dict[str, Board] = {RUN_BOARD: Board(run, self)}
        self.latest = RUN_BOARD
        """The board a request that names none is for: the latest team call's, if any."""
        self._teams: dict[str, int] = {}
        """Team calls started so far, by branch (they number the team boards)."""
        self._wakeups: dict[str, list[tuple[str, list[int]]]] = {}
        """A resumed run's team boards: the wake-ups of their roles in earlier processes, for
        the team call that opens the board again (`Board.wake_again`)."""
        previous = run.deps.journal.previous if run.deps.journal is not None else None
        if previous is not None:
            self._restore(previous.board, previous.finished_at)

    @property
    def run_board(self) -> Board:
        return self.boards[RUN_BOARD]

    def open_team(self, branch: str) -> Board:
        """The board of the next team call in `branch` (rebuilt, if a resumed run had it)."""
        index = self._teams.get(branch, 0)
        self._teams[branch] = index + 1
        name = child_branch(branch, "team", index)
        self.latest = name
        board = self._board(name)
        board.wake_again(self._wakeups.pop(name, ()))
        return board

    def named(self, name: str | None) -> Board | None:
        """The board called `name` (None: `latest`), or None when the run has none so named."""
        return self.boards.get(self.latest if name is None else name)

    def _board(self, name: str) -> Board:
        board = self.boards.get(name)
        if board is None:
            board = self.boards[name] = Board(self.run, self, name)
        return board

    def _restore(self, facts: Sequence[BoardFact], finished: Sequence[tuple[int, str]]) -> None:
        """Rebuild every board an earlier process used from its own events."""
        by_board: dict[str, list[BoardFact]] = {}
        for fact in facts:
            by_board.setdefault(fact.board, []).append(fact)
        for name, own in by_board.items():
            restore_board(self._board(name), own, finished)
            if name != RUN_BOARD:
                self.latest = name
                self._wakeups[name] = wakeups(own)


def boards_of(run: RunContext) -> RunBoards:
    """The run's boards, made on first use (a resumed run's are rebuilt from its events)."""
    board = run.state.board
    if isinstance(board, Board):
        return board.family
    family = RunBoards(run)
    run.state.board = family.run_board
    return family


def board_for(run: RunContext) -> Board:
    """The run's own board (the one outside every team call), made on first use."""
    return boards_of(run).run_board
