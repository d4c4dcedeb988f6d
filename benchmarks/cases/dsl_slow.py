"""DSL: inputs that once made the checker slow; each must finish in seconds with a located answer.

- 3,000 lines of steps full of unknown names (the did-you-mean lookup was quadratic);
- one line of 1 MB (a list of 100,000 numbers);
- 200,000 declared edges;
- 20,000 lines of steps.

Each row is `check_source` on the generated text, timed once after a warm-up, with what it
reported as the note.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from benchmarks._harness import Row, Settings, Target

CASE = "dsl slow inputs"
UNKNOWN_TARGET_MS = 1000.0
LARGE_TARGET_MS = 5000.0


def unknown_names(lines: int = 3000) -> str:
    """Every step reads a name nobody assigned (each with a near miss that is visible)."""
    body = [f"  value_{i} = missing_{i} + valeu_{i}" for i in range(lines)]
    return "flow f(task: str) -> str\nsteps {\n" + "\n".join(body) + "\n  return task\n}\n"


def megabyte_line(items: int = 100_000) -> str:
    numbers = ", ".join("1234567" for _ in range(items))
    return f"flow f(task: str) -> list\nsteps {{\n  xs = [{numbers}]\n  return xs\n}}\n"


def many_edges(agents: int = 1000, per_agent: int = 200) -> str:
    """`agents` agents and `agents * per_agent` edges between them (200,000 by default)."""
    head = ["flow f(task: str) -> str"]
    head += [f"agent a{i} {{}}" for i in range(agents)]
    for i in range(agents):
        targets = [f"a{i} -> a{(i + k) % agents}" for k in range(1, per_agent + 1)]
        head.append("edges " + ", ".join(targets))
    steps = ["steps {", "  x = a0(task)"] + [f"  x = a{i}(x)" for i in range(1, agents)]
    return "\n".join(head + steps + ["  return x.text", "}"]) + "\n"


def many_lines(lines: int = 20_000) -> str:
    """A chain of agent calls with arithmetic between them, clean."""
    body = ["  x = a(task)"]
    for i in range(1, lines):
        body.append("  x = a(x)" if i % 2 else f"  n{i} = len(x.text) + {i}")
    body.append("  return x.text")
    return "flow f(task: str) -> str\nagent a {}\nsteps {\n" + "\n".join(body) + "\n}\n"


def _summary(found: list) -> str:
    errors = [d for d in found if d.is_error]
    if not errors:
        return f"clean, {len(found)} warning(s)" if found else "clean"
    first = errors[0]
    return f"{len(errors)} error(s), first at {first.line}:{first.column}: {first.message}"[:140]


def _timed(make: Callable[[], str], name: str, target: float) -> Row:
    from swarmflow.dsl import check_source

    text = make()
    check_source("flow f()\nsteps {\n}\n")  # warm-up: the grammar and the tables are built once
    started = time.perf_counter()
    found = check_source(text, name)
    ms = (time.perf_counter() - started) * 1000
    return Row(CASE, name, "ms", ms, target=Target(target), note=_summary(found))


def bench(settings: Settings) -> list[Row]:
    """The full sizes at the default 2,000-line DSL setting; smaller settings scale down."""
    scale = min(1.0, settings.dsl_lines / 2000)

    def size(n: int) -> int:
        return max(2, int(n * scale))

    return [
        _timed(
            lambda: unknown_names(size(3000)),
            f"{size(3000):,} lines of unknown names",
            UNKNOWN_TARGET_MS,
        ),
        _timed(
            lambda: megabyte_line(size(100_000)),
            f"one line of {size(100_000) * 9 // 1000:,} kB",
            LARGE_TARGET_MS,
        ),
        _timed(
            lambda: many_edges(size(1000), size(200)),
            f"{size(1000) * size(200):,} edges",
            LARGE_TARGET_MS,
        ),
        _timed(lambda: many_lines(size(20_000)), f"{size(20_000):,} lines", LARGE_TARGET_MS),
    ]
