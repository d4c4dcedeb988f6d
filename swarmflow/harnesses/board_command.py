"""The board commands on a harness's PATH: `create_thread`, `send_message`, `wait_for_mention`,
and `watch_mentions`, the background watcher.

Each is a two-line shell script that runs this one with its own name first; this one talks
to the run's board over HTTP (`teams.http`) as the agent in `SWARMFLOW_AGENT`, with the token in
`SWARMFLOW_BOARD_TOKEN`: a token bound to that agent alone, so the board checks every message
against that agent's edges.

    create_thread NAME [PARTICIPANT ...]
    send_message THREAD CONTENT [--mention AGENT ...]
    wait_for_mention [TIMEOUT_SECONDS]
    watch_mentions [FILE]     # append every mention to FILE (default $SWARMFLOW_MENTIONS)

Each prints the board's answer. Exit codes: 0 done, 1 refused (the reason on stderr), 2 a
usage error. Standard library only: it runs with `-I -S`.
"""

from __future__ import annotations

import json
import os
import sys
import urllib.error
import urllib.request
from collections.abc import Mapping
from typing import Any

WAIT_DEFAULT = 60.0


def _post(path: str, body: Mapping[str, object], timeout: float) -> tuple[int, dict[str, Any]]:
    url = os.environ["SWARMFLOW_BOARD_URL"].rstrip("/") + path
    data = json.dumps({"as": os.environ["SWARMFLOW_AGENT"], **body}).encode()
    request = urllib.request.Request(
        url,
        data=data,
        method="POST",
        headers={
            "Authorization": f"Bearer {os.environ['SWARMFLOW_BOARD_TOKEN']}",
            "Content-Type": "application/json",
        },
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout) as answer:
            return answer.status, json.loads(answer.read() or b"{}")
    except urllib.error.HTTPError as err:
        try:
            return err.code, json.loads(err.read() or b"{}")
        except ValueError:
            return err.code, {"ok": False, "error": err.reason}


def _answer(status: int, body: dict[str, Any]) -> int:
    if status == 200 and body.get("ok"):
        print(body.get("text", ""))
        return 0
    print(f"refused ({status}): {body.get('error', 'no reason given')}", file=sys.stderr)
    return 1


def _usage(text: str) -> int:
    print(f"usage: {text}", file=sys.stderr)
    return 2


def create_thread(args: list[str]) -> int:
    if not args:
        return _usage("create_thread NAME [PARTICIPANT ...]")
    return _answer(*_post("/threads", {"name": args[0], "participants": args[1:]}, 30))


def send_message(args: list[str]) -> int:
    mentions, rest = [], []
    items = iter(args)
    for item in items:
        if item == "--mention":
            mentions.append(next(items, ""))
        else:
            rest.append(item)
    if len(rest) != 2 or "" in mentions:
        return _usage("send_message THREAD CONTENT [--mention AGENT ...]")
    body = {"thread": rest[0], "content": rest[1], "mentions": mentions}
    return _answer(*_post("/messages", body, 30))


def wait_for_mention(args: list[str]) -> int:
    try:
        timeout = float(args[0]) if args else WAIT_DEFAULT
    except ValueError:
        return _usage("wait_for_mention [TIMEOUT_SECONDS]")
    return _answer(*_post("/wait", {"timeout": timeout}, timeout + 30))


def watch_mentions(args: list[str]) -> int:
    """Passive awareness: wait for mentions forever, appending each to the file."""
    path = args[0] if args else os.environ.get("SWARMFLOW_MENTIONS", "mentions.txt")
    while True:
        status, body = _post("/wait", {"timeout": WAIT_DEFAULT}, WAIT_DEFAULT + 30)
        if status != 200:
            return _answer(status, body)
        text = str(body.get("text", ""))
        if text and not text.startswith("no mention"):
            with open(path, "a", encoding="utf-8") as out:
                out.write(text + "\n")


COMMANDS = {
    "create_thread": create_thread,
    "send_message": send_message,
    "wait_for_mention": wait_for_mention,
    "watch_mentions": watch_mentions,
}


def main(argv: list[str]) -> int:
    name = argv[1] if len(argv) > 1 else ""
    command = COMMANDS.get(name)
    if command is None:
        return _usage(f"board_command.py COMMAND [ARG ...], COMMAND one of {', '.join(COMMANDS)}")
    try:
        return command(argv[2:])
    except (OSError, KeyError) as exc:
        print(f"{name}: cannot reach the board: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
