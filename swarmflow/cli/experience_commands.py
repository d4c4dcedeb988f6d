"""`swarmflow experience list|show|forget`: the notes runs distilled for later runs."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

from swarmflow.cli.exit_status import OK, PROBLEMS

if TYPE_CHECKING:
    from swarmflow.experience.store import ExperienceStore

TEXT_COLUMNS = 90


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    experience = subparsers.add_parser(
        "experience", help="list, show or forget the notes runs wrote for later runs"
    )
    experience.add_argument(
        "--store",
        metavar="STORE",
        help="the experience store (default: experience.db in the runs root)",
    )
    # `--store` also after the action (`experience list --store X`): where it is given last, it
    # wins; not given there, the one before the action (or its default) stands.
    after = argparse.ArgumentParser(add_help=False)
    after.add_argument(
        "--store",
        metavar="STORE",
        default=argparse.SUPPRESS,
        help="the experience store (also accepted before the action)",
    )
    sub = experience.add_subparsers(dest="action", metavar="ACTION", required=True)
    listing = sub.add_parser(
        "list", help="one line per note: id, agent, kind, text", parents=[after]
    )
    listing.add_argument("--agent", help="only this agent's notes")
    listing.set_defaults(handler=list_command)
    show = sub.add_parser(
        "show", help="a note in full, with the task and run it came from", parents=[after]
    )
    show.add_argument("note", type=int, metavar="ID")
    show.set_defaults(handler=show_command)
    forget = sub.add_parser(
        "forget", help="remove notes, so no later run is offered them", parents=[after]
    )
    forget.add_argument("notes", type=int, nargs="+", metavar="ID")
    forget.set_defaults(handler=forget_command)


def _store(args: argparse.Namespace) -> ExperienceStore:
    """The store named by --store, else the runs root's; a missing one is a usage error."""
    from swarmflow.experience.run_notes import DEFAULT_STORE
    from swarmflow.experience.store import ExperienceError, ExperienceStore
    from swarmflow.record.runs_root import resolve_runs_root

    path = Path(args.store) if args.store else resolve_runs_root(None) / DEFAULT_STORE
    if not path.is_file():
        raise ExperienceError(f"no experience store at {path}; a run with --experience writes one")
    return ExperienceStore(path)


def list_command(args: argparse.Namespace) -> int:
    notes = _store(args).notes(args.agent)
    if not notes:
        print("no notes", file=sys.stderr)
        return OK
    for n in notes:
        text = n.text if len(n.text) <= TEXT_COLUMNS else n.text[: TEXT_COLUMNS - 1] + "…"
        print(f"{n.id:>5}  {n.agent:<12} {n.kind:<7} {text}")
    return OK


def show_command(args: argparse.Namespace) -> int:
    n = _store(args).get(args.note)
    if n is None:
        print(f"swarmflow experience show: no note {args.note}", file=sys.stderr)
        return PROBLEMS
    written = time.strftime("%Y-%m-%d %H:%M", time.localtime(n.created))
    print(f"note {n.id} ({n.kind}) for {n.agent}, from run {n.run_id} at {written}")
    print(f"repository: {n.repository or '-'}")
    print(f"task: {n.task}")
    print()
    print(n.text)
    return OK


def forget_command(args: argparse.Namespace) -> int:
    gone = _store(args).forget(args.notes)
    missing = len(set(args.notes)) - gone
    print(f"forgot {gone} note{'s' if gone != 1 else ''}")
    if missing > 0:
        print(f"swarmflow experience forget: {missing} of the ids named no note", file=sys.stderr)
        return PROBLEMS
    return OK
