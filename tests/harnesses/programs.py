"""Small real harness programs for the tests, each run as `python -c SOURCE MODE [ARG...]`.

Standard library only, so they run in the sandbox as they would on the host. They reach the
model through `$OPENAI_BASE_URL` with `$OPENAI_API_KEY`, as an OpenAI client does.

Modes:
- `coder TASK`: asks the model what to write to `app.py`, writes it (and appends it to
  `drafts.txt`), asks again for its summary, prints the summary (the answer);
- `forever MARKER`: asks the model again and again, never stopping by itself;
- `board ALLOWED OTHER`: opens a thread with each and mentions each through the board
  commands, printing what each command answered;
- `leak FILE`: sends FILE's text to its model and prints the status it got;
- `leak_in_tool FILE WHERE`: sends FILE's text inside a tool it offers its model (WHERE:
  `description`, `parameter` (a parameter's description) or `enum`); prints the status;
- `stream SCHEMA`: a streamed request with one tool of that JSON schema; prints the tool calls;
- `hostile MARKER`: a 10 MB request, 500 connections at once, then never exits;
- `sleeper MARKER`: starts a detached child (`setsid`) and both sleep; prints READY first;
- `detacher MARKER`: starts a detached child (`setsid`) that sleeps, asks its model once,
  prints the answer and exits;
- `oversize TRIES`: sends a 10 MB body TRIES times and prints the status each got (`lost`
  when the connection broke before an answer came);
- `forge TEXT ANSWER_FILE`: writes TEXT to an `owner` file beside its answer file (in its
  private folder), asks its model once, then writes its answer file;
- `link TARGET ANSWER_FILE`: makes its answer file a symbolic link to TARGET and exits;
- `malformed`: sends requests of wrong-typed fields and one nested 100,000 deep, printing
  each status, then asks its model once and prints the answer;
- `key`: asks its model once with a message that holds its endpoint key, prints the answer;
- `probe HOST PORT`: tries to connect to a service at HOST:PORT, then asks its model once;
  prints `host: reached|unreachable (...)` and `endpoint: STATUS`.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

SOURCE = Path(__file__).read_text() if "__file__" in globals() else ""


def command(mode: str, *args: str) -> list[str]:
    """The harness command that runs this program in `mode`."""
    return [sys.executable, "-I", "-c", SOURCE, mode, *args]


def _ask(messages: Any, **extra: Any) -> tuple[int, dict[str, Any]]:
    body = json.dumps({"model": "swarmflow", "messages": messages, **extra}).encode()
    return _post(body)


def _post(body: bytes) -> tuple[int, dict[str, Any]]:
    url = os.environ["OPENAI_BASE_URL"] + "/chat/completions"
    request = urllib.request.Request(url, data=body, method="POST", headers={
        "Authorization": f"Bearer {os.environ['OPENAI_API_KEY']}",
        "Content-Type": "application/json",
    })  # fmt: skip
    try:
        with urllib.request.urlopen(request, timeout=60) as answer:
            return answer.status, json.loads(answer.read())
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read() or b"{}")


def _text(answer: dict[str, Any]) -> str:
    return str(answer["choices"][0]["message"]["content"] or "")


def coder(task: str) -> None:
    messages = [{"role": "user", "content": task}]
    status, answer = _ask(messages)
    assert status == 200, answer
    Path("app.py").write_text(_text(answer))
    with Path("drafts.txt").open("a") as drafts:  # appended: a restart on a dirty tree shows
        drafts.write(_text(answer))
    messages += [{"role": "assistant", "content": _text(answer)},
                 {"role": "user", "content": "summarise"}]  # fmt: skip
    status, answer = _ask(messages, stream=False)
    assert status == 200, answer
    print(_text(answer))


def forever(marker: str) -> None:
    messages: list[dict[str, Any]] = [{"role": "user", "content": f"go on ({marker})"}]
    while True:
        status, answer = _ask(messages)
        if status != 200:
            time.sleep(0.05)  # a client that retries: it is stopped from outside
            continue
        messages += [{"role": "assistant", "content": _text(answer)},
                     {"role": "user", "content": "more"}]  # fmt: skip


def _run(*argv: str) -> str:
    done = subprocess.run(list(argv), check=False, capture_output=True, text=True)
    return f"{argv[0]}: {done.returncode}: {done.stdout.strip()} {done.stderr.strip()}"


def board(allowed: str, other: str) -> None:
    print(_run("create_thread", "plan", allowed))
    print(_run("send_message", "plan", "the plan", "--mention", allowed))
    print(_run("create_thread", "secret", other))
    print(_run("send_message", "plan", "psst", "--mention", other))


def leak(path: str) -> None:
    status, answer = _ask([{"role": "user", "content": f"review: {Path(path).read_text()}"}])
    print(f"status {status}: {answer.get('error', {}).get('message', '')}")


def leak_in_tool(path: str, where: str) -> None:
    text = Path(path).read_text()
    parameter: dict[str, Any] = {"type": "string", "description": "which file"}
    if where == "parameter":
        parameter["description"] = text
    if where == "enum":
        parameter["enum"] = ["a.txt", text]
    described = text if where == "description" else "reads a file"
    schema = {"type": "object", "properties": {"path": parameter}}
    tool = {"type": "function",
            "function": {"name": "read", "description": described, "parameters": schema}}
    status, answer = _ask([{"role": "user", "content": "go"}], tools=[tool])
    print(f"status {status}: {answer.get('error', {}).get('message', '')}")


def stream(schema: str) -> None:
    """Streams a request carrying one tool; prints the tool call it was streamed."""
    tools = [{"type": "function", "function": {
        "name": "bash", "description": "run it", "parameters": json.loads(schema)}}]  # fmt: skip
    url = os.environ["OPENAI_BASE_URL"] + "/chat/completions"
    body = {"model": "m", "messages": [{"role": "user", "content": "go"}], "tools": tools,
            "stream": True, "top_p": 0.5}  # fmt: skip
    request = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST",
                                     headers={"Authorization": f"Bearer {os.environ['OPENAI_API_KEY']}"})  # fmt: skip
    calls, finish = [], None
    with urllib.request.urlopen(request, timeout=60) as answer:
        assert answer.headers["content-type"] == "text/event-stream"
        for line in answer.read().decode().splitlines():
            if not line.startswith("data: ") or line == "data: [DONE]":
                continue
            choice = json.loads(line[6:])["choices"][0]
            calls += choice["delta"].get("tool_calls", [])
            finish = choice["finish_reason"] or finish
    print(json.dumps({"calls": [c["function"] for c in calls], "finish": finish}))


def hostile(marker: str) -> None:
    try:
        status, _ = _ask([{"role": "user", "content": "x" * (10 << 20)}])
        print(f"big: {status}", flush=True)
    except OSError as exc:  # the endpoint answered 413 and hung up while it was sending
        print(f"big: {exc}", flush=True)
    url = os.environ["OPENAI_BASE_URL"].split("//", 1)[1].split("/", 1)[0]
    host, port = url.split(":")
    held = []
    for _ in range(500):
        try:
            held.append(socket.create_connection((host, int(port)), timeout=5))
        except OSError:
            break
    print(f"connections: {len(held)}", flush=True)
    try:
        status, _ = _ask([{"role": "user", "content": "still there?"}])
        print(f"after: {status}", flush=True)
    except OSError as exc:
        print(f"after: {exc}", flush=True)
    time.sleep(3600)


def sleeper(marker: str) -> None:
    subprocess.Popen([sys.executable, "-c", "import time; time.sleep(3600)", marker],
                     start_new_session=True)  # fmt: skip
    status, answer = _ask([{"role": "user", "content": f"ready ({marker})"}])
    time.sleep(3600)


def detacher(marker: str) -> None:
    subprocess.Popen([sys.executable, "-c", "import time; time.sleep(3600)", marker],
                     start_new_session=True, stdout=subprocess.DEVNULL)  # fmt: skip
    status, answer = _ask([{"role": "user", "content": f"detached ({marker})"}])
    print(f"{status}: {answer}", flush=True)


def malformed() -> None:
    deep = b'{"model": "m", "messages": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
    bodies = [
        json.dumps({"messages": [{"role": ["user"], "content": "x"}]}).encode(),
        json.dumps({"messages": [{"role": "user", "content": "x", "tool_calls": 5}]}).encode(),
        deep,
    ]
    print(" ".join(str(_post(body)[0]) for body in bodies), flush=True)
    status, answer = _ask([{"role": "user", "content": "still there?"}])
    print(f"{status}: {_text(answer)}", flush=True)


def oversize(tries: str) -> None:
    body = json.dumps({"messages": [{"role": "user", "content": "x" * (10 << 20)}]}).encode()
    statuses = []
    for _ in range(int(tries)):
        try:
            statuses.append(str(_post(body)[0]))
        except (OSError, urllib.error.URLError):
            statuses.append("lost")

    print(" ".join(statuses), flush=True)


def forge(text: str, answer_file: str) -> None:
    Path(answer_file).with_name("owner").write_text(text)
    _ask([{"role": "user", "content": "forged"}])
    Path(answer_file).write_text("forger done")


def link(target: str, answer_file: str) -> None:
    os.symlink(target, answer_file)


def probe(host: str, port: str) -> None:
    try:
        socket.create_connection((host, int(port)), timeout=5).close()
        print("host: reached", flush=True)
    except OSError as exc:
        print(f"host: unreachable ({exc})", flush=True)
    status, _ = _ask([{"role": "user", "content": "are you there?"}])
    print(f"endpoint: {status}", flush=True)


def key() -> None:
    status, answer = _ask([{"role": "user", "content": f"my key: {os.environ['OPENAI_API_KEY']}"}])
    print(_text(answer) if status == 200 else f"status {status}")


if __name__ == "__main__":
    globals()[sys.argv[1]](*sys.argv[2:])


if "__file__" in globals():  # imported (not run as a harness): a harness for the .swarm tests
    from swarmflow.harnesses import Harness

    # Spelled in two parts: a placeholder anywhere in an argument, this source included, is
    # filled, and this source is an argument of the command.
    CODER = Harness(command=command("coder", "{" + "task}"), name="fake-coder")
