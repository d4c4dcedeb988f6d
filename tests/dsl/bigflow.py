"""A generated flow of any length, shaped like real ones: agents, edges, steps, sessions."""

from __future__ import annotations


def big_flow(lines: int = 2000, agents: int = 20) -> str:
    """A clean `.swarm` flow of about `lines` lines."""
    out = [
        "# A generated flow for size and speed checks.",
        "flow big(task: str, rounds: int = 2) -> str",
        "",
        "budget tokens 50M, calls 20000, cost $500, time 8h",
        "",
    ]
    for a in range(agents):
        out += [
            f"agent worker{a} {{",
            '  card "You are worker {{ n }}. Be brief."',
            "  tools [read_file, search]",
            "  allowance 100k",
            "  steps 12",
            "}",
        ]
    chain = " -> ".join(f"worker{a}" for a in range(agents))
    out += [f"edges {chain} -> human", "", "steps {", "  left = budget()"]
    body: list[str] = []
    block = 0
    while len(out) + len(body) < lines - 2:
        body += _block(block, agents)
        block += 1
    out += body
    out += ["  return last0", "}"]
    return "\n".join(out) + "\n"


def _block(b: int, agents: int) -> list[str]:
    a = b % (agents - 1)  # worker a hands to worker a + 1, along the declared chain
    nxt = a + 1
    prev = f"last{b - 1}" if a else "task"  # a new round of the chain starts from the task
    return [
        f"  # stage {b}",
        f"  n{b} = clamp(left.tokens / 400k, 1, 3)",
        f'  draft{b} = worker{a}("Step {b} of {{task}}: improve {{{prev}}}", n: {b})',
        f"  outs{b} = compact(parallel(n{b}) |i| {{",
        f'    worker{a}("Variant {{i}} of step {b}", n: i)',
        "  })",
        f"  if draft{b}.ok and len(outs{b}) > 0 {{",
        f"    best{b} = worker{nxt}(draft{b}, n: {b})",
        "  } else {",
        f"    best{b} = worker{nxt}(outs{b}, n: 0)",
        "  }",
        f"  last{b} = best{b}",
    ]
