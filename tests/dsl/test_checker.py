"""`check`: every kind of diagnostic, located, rendered with the source line and a caret."""

from __future__ import annotations

import pytest

from swarmflow.dsl import check_source

from .helpers import EXAMPLES, codes, diags, errors, flow_text, rendered

TEAM = """
agent coder { tools [read_file, edit] allowance 400k }
agent reviewer { tools [read_file] }
agent arbiter {}
"""
EDGES = "edges coder -> reviewer -> arbiter -> human, coder -> arbiter"
HEAD = "use Verdict, has_text, first_line from swarm_examples\n"


def flow(
    steps: str,
    *,
    budget: str = "budget tokens 2M, calls 400",
    edges: str = EDGES,
    agents: str = TEAM,
) -> str:
    return flow_text(steps, head=HEAD + budget, agents=agents, edges=edges)


CLEAN = """
  left = budget()
  n = clamp(left.tokens / 400k, 1, 4)
  candidates = compact(parallel(n) { coder(task) })
  reviews = compact(pipeline(candidates) |c| { reviewer(c) })
  session arbiter {
    send each reviews
    verdict = ask "Pick the best for {task}." as Verdict
  }
  if verdict.confidence < 0.7 {
    verdict = human("Approve?", verdict)
  }
  return verdict
"""


def test_a_clean_flow_has_no_diagnostics():
    assert diags(flow(CLEAN)) == []


@pytest.mark.parametrize("path", sorted(EXAMPLES.glob("*.swarm")), ids=lambda p: p.name)
def test_examples_are_clean(path):
    assert check_source(path.read_text(), str(path), resolve=True) == []


def test_rendering_is_file_line_col_severity_message_then_source_and_caret():
    source = flow("  x = coder(tsk)\n  return x", agents="agent coder {}", edges="")
    assert rendered(source) == (
        "t.swarm:7:13: error: unknown name 'tsk'; did you mean 'task'?\n"
        "      x = coder(tsk)\n"
        "                ^~~\n"
        "1 error, 0 warnings"
    )


def test_syntax_errors_are_diagnostics_too():
    [d] = diags("flow f() -> str\nsteps {\n  x = (1\n}\n")
    assert (d.code, d.line) == ("syntax", 3)


def test_unknown_names_agents_tools_and_operators_suggest_a_fix():
    source = flow(
        "  a = reviwer(task)\n"
        "  b = pipline([task]) |c| { reviewer(c) }\n"
        "  session arbitr { send task }\n"
        "  return tsk",
        agents=TEAM + "agent tester { tools [read_flie] }",
    )
    found = {(d.code, d.message) for d in diags(source)}
    assert ("unknown-agent", "unknown agent 'reviwer'; did you mean 'reviewer'?") in found
    assert ("unknown-operator", "unknown operator 'pipline'; did you mean 'pipeline'?") in found
    assert any(c == "unknown-agent" and "'arbitr'" in m and "'arbiter'" in m for c, m in found)
    assert any(c == "unknown-name" and "'tsk'" in m and "'task'" in m for c, m in found)
    assert any(c == "unknown-tool" and "'read_flie'" in m and "'read_file'" in m for c, m in found)


def test_unknown_edge_ends_fields_workspaces_types_and_budget_keys():
    source = (
        "flow f(task: strr) -> str\n"
        "budget tokenz 2M, cost 5\n"
        "agent a { workspace worktre  alowance 3k }\n"
        "edges a -> b\n"
        "steps { return a(task) }\n"
    )
    messages = [d.message for d in errors(source)]
    for words in (
        "'strr'",
        "'tokenz' (use tokens",
        "did you mean 'tokens'",
        "'cost' takes a cost",
        "'worktre' (use none, local, worktree or shared); did you mean 'worktree'",
        "'alowance'",
        "unknown agent 'b' in edges",
    ):
        assert any(words in m for m in messages), words


def test_a_handoff_without_its_edge_is_an_error_at_the_handoff():
    source = flow(
        '  c = coder(task)\n  r = reviewer("Review: {c}")\n  return human("OK?", r)',
        edges="edges coder -> arbiter",
    )
    text = rendered(source)
    assert (
        "t.swarm:12:16: error: coder's output reaches reviewer here (prompt), but no edge "
        "coder -> reviewer is declared; add `edges coder -> reviewer` (declared edges: "
        "coder -> arbiter)\n"
        '      r = reviewer("Review: {c}")\n'
        "                   ^~~~~~~~~~~~~"
    ) in text
    assert "reviewer's output reaches human here (payload)" in text


def test_provenance_flows_through_operators_sessions_and_card_variables():
    source = flow(
        "  cands = compact(parallel(2) { coder(task) })\n"
        "  picks = pipeline(cands) |c| { c }\n"
        '  session arbiter(hint: picks) { v = ask "pick" as Verdict }\n'
        "  r = reviewer(task, notes: v)\n"
        "  return r",
        edges="edges coder -> reviewer",
    )
    handoffs = [d.message for d in diags(source) if d.code == "handoff"]
    assert any(
        "coder's output reaches arbiter" in m and "card variable 'hint'" in m for m in handoffs
    )
    assert any(
        "arbiter's output reaches reviewer" in m and "card variable 'notes'" in m for m in handoffs
    )


def test_values_from_inputs_and_literals_go_anywhere():
    source = flow(
        '  a = coder(task)\n  b = arbiter("plain text")\n  return reviewer(task)', edges=""
    )
    assert "handoff" not in codes(source)


def test_unused_agents_are_warnings():
    source = flow("  return coder(task)")
    warnings = [d for d in diags(source) if d.code == "unused-agent"]
    assert {w.message.split("'")[1] for w in warnings} == {"reviewer", "arbiter"}
    assert all(w.severity == "warning" for w in warnings)


def test_agents_reached_through_message_agent_are_used():
    agents = "agent lead { tools [message_agent] }\nagent helper {}"
    source = flow_text("  return lead(task)", agents=agents, edges="edges lead -> helper")
    assert "unused-agent" not in codes(source)


@pytest.mark.parametrize(
    ("steps", "words"),
    [
        ("  n = 3\n  return pipeline(n) |c| { coder(c) }", "pipeline(...) needs a list"),
        ("  left = budget()\n  return compact(left)", "compact(...) needs a list"),
        ('  return parallel("three") { coder(task) }', "takes a number of branches"),
        ("  return parallel(-1) { coder(task) }", "whole number"),
        ("  return pipeline([task])", "at least one stage"),
        ("  return pipeline([task], 3)", "a pipeline stage is"),
        ("  return pipeline([task]) |a, b| { a }", "takes one item"),
        ("  send task\n  return task", "goes inside `session"),
        ("  return coder(task, task)", "takes one prompt"),
        ("  return coder(task) |x| { x }", "no |x|"),
        ("  return coder(task, output: Verdikt)", "unknown model 'Verdikt'"),
        ("  return budget(3)", "budget() takes nothing"),
        ("  return clamp(1, 2)", "clamp(value, low, high)"),
        ("  return min()", "at least one value"),
        ("  return human()", "needs a question"),
        ('  return human("q", task, on_timeout: "default")', "needs default:"),
        ('  return human("q", timout: 3)', "did you mean 'timeout'"),
        ("  return parallel(2, limt: 1) { coder(task) }", "did you mean 'limit'"),
        ("  left = budget()\n  return left.tokenz", "did you mean 'tokens'"),
        ("  c = coder(task)\n  return c.txt", "did you mean 'text'"),
        ("  c = coder(task)\n  return c + 1", "use .text"),
        ("  c = coder(task)\n  return c[0]", "cannot be indexed"),
        ("  x = coder\n  return x", "is called, not used as a value"),
        ("  coder = 3\n  return coder", "choose another name"),
        ("  return compact([task]) |x| { x }", "keep:"),
        ("  return task()", "is a value, not something to call"),
        ('  return "a" + 3', "cannot add text and a number"),
        ("  return pipeline(parallel(2, first: 1) { coder(task) }) |c| { c }", "first:"),
        ("  x = min\n  return x", "'min' is a built-in; call it: min(...)"),
        ("  return [task].text", "take one item first, e.g. items[0].text"),
        ("  return task.size", "a string has no attribute 'size'"),
        ("  return [task][true]", "an index is a number or a key, not true or false"),
        ('  return -"a"', "'-' needs a number"),
        ("  return coder(task, output: 3)", "output: takes the name of a model"),
        ('  return human("q", timeout: 3, timeout: 4)', "'timeout' is given twice"),
        ("  return mn(3)", "unknown function 'mn'; did you mean 'min'?"),
        ("  return min(1, x: 2)", "min(...) takes no options"),
        ("  return clamp(3, 5, 1)", "clamp's low is above its high"),
        ('  return human("q", 1, 2)', "human(question, payload) takes two values"),
        ("  return human(3)", "the question must be text, not a number"),
        ('  return human("q", on_timeout: "later")', 'on_timeout is "default" or "fail"'),
        ("  return compact()", "compact(outcomes) takes one list"),
        ("  return compact([task], keep: 3)", "keep: takes a predicate or pydantic model"),
        ("  return pipeline()", "pipeline needs a source"),
        ("  return parallel() { coder(task) }", "parallel(n) takes the number of branches"),
        ("  return parallel(2) |a, b| { coder(task) }", "at most one name, the branch index"),
        ("  session arbiter(task) {\n    send task\n  }\n  return task", "card variables as"),
    ],
)
def test_operator_misuse(steps, words):
    found = [d.message for d in errors(flow(steps))]
    assert any(words in m for m in found), found


def test_infeasible_fan_out_is_an_error_when_n_is_known():
    source = flow("  return compact(parallel(4) { coder(task) })", budget="budget tokens 1M")
    [d] = [d for d in diags(source) if d.code == "budget"]
    assert d.severity == "error"
    assert d.message.startswith(
        "parallel(4) may need 1.6M tokens (coder x1 per branch, at "
        "allowances of coder 400k) but the flow's budget is 1M tokens"
    )


def test_infeasible_fan_out_is_a_warning_when_n_is_only_bounded():
    source = flow(
        "  left = budget()\n"
        "  n = clamp(left.tokens / 400k, 1, 4)\n"
        "  return parallel(n) { coder(task) }",
        budget="budget tokens 1M",
    )
    [d] = [d for d in diags(source) if d.code == "budget"]
    assert d.severity == "warning" and "n is at most 4" in d.message


def test_fan_out_also_counts_model_calls_and_nesting():
    source = flow(
        "  return parallel(3) |i| { parallel(2) { coder(task) } }", budget="budget calls 5"
    )
    [d] = [d for d in diags(source) if d.code == "budget"]
    assert "parallel(3) may need 6 calls" in d.message


def test_a_fan_out_that_fits_is_fine():
    source = flow("  return parallel(2) { coder(task) }", budget="budget tokens 1M")
    assert "budget" not in codes(source)


def test_code_after_return_is_an_error():
    source = flow("  return task\n  x = coder(task)")
    [d] = [d for d in diags(source) if d.code == "unreachable"]
    assert (d.line, d.severity) == (12, "error")
    assert "comes after the return on line 11" in d.message


def test_code_after_an_if_that_returns_on_both_branches_is_unreachable():
    source = flow('  if task == "" { return "none" } else { return task }\n  return task')
    assert "unreachable" in codes(source)


def test_names_used_before_they_are_assigned():
    source = flow("  a = b\n  b = coder(task)\n  return a")
    [d] = [d for d in errors(source) if d.code == "unknown-name"]
    assert "'b' is used before it has a value (it is assigned on line 12)" in d.message


def test_a_name_assigned_in_one_branch_only_is_a_warning():
    source = flow('  if task == "x" { r = coder(task) }\n  return r')
    [d] = [d for d in diags(source) if d.code == "maybe-unassigned"]
    assert d.severity == "warning"


def test_expressions_without_effect_and_bodies_without_value_warn():
    source = flow("  1 + 2\n  x = parallel(2) { y = coder(task) }\n  return x")
    assert {"no-effect", "no-value"} <= set(codes(source))


def test_card_variables_must_be_passed():
    agents = 'agent coder { card "Fix {{ task }} in {{ repo }}." }'
    source = flow_text("  return coder(task, task: task)", agents=agents)
    [d] = errors(source)
    assert d.code == "card" and "repo" in d.message and "repo: ..." in d.message


@pytest.mark.parametrize(
    ("card", "missing"),
    [
        ("{% for f in files %}{{ f }} {{ loop.index }}{% endfor %}", "files"),
        ("{% if strict %}Be strict.{% endif %}", "strict"),
        ("{% set n = 3 %}{{ n }} {{ notes | upper }}", "notes"),
    ],
)
def test_card_variables_are_what_jinja_reads(card, missing):
    source = flow_text("  return coder(task)", agents=f'agent coder {{ card "{card}" }}')
    [d] = errors(source)
    assert d.code == "card" and f"uses {missing}," in d.message


def test_a_card_that_is_not_valid_jinja_is_an_error_at_the_card():
    source = flow_text("  return coder(task)", agents='agent coder { card "Fix {{ task " }')
    [d] = errors(source)
    assert (d.code, d.line, d.column) == ("card", 3, 20)
    assert d.message.startswith("line 1 of this card is not valid Jinja")


def test_duplicates_and_reserved_names():
    source = (
        "flow f(task: str, task: str) -> str\n"
        "agent a {}\nagent a {}\nagent human {}\nagent min {}\n"
        "budget tokens 1M, tokens 2M\n"
        "steps { return a(task) }\nsteps { }\n"
    )
    messages = " | ".join(d.message for d in errors(source))
    for words in (
        "declared twice",
        "'human' is the built-in",
        "'min' is a built-in",
        "given twice",
        "one `steps",
    ):
        assert words in messages


def test_an_input_named_like_an_agent_is_an_error_at_the_input():
    source = "flow f(coder: str) -> str\nagent coder {}\nsteps { return coder(coder).text }\n"
    [first, *_] = errors(source)
    assert (first.line, first.column) == (1, 8)
    assert first.message == "input 'coder' has the name of an agent or import; rename it"


def test_missing_header_steps_and_return():
    assert "missing-flow" in codes("agent a {}\nsteps { return 1 }\n")
    assert "missing-steps" in codes("flow f() -> str\n")
    assert "no-return" in codes("flow f() -> str\nsteps { x = 1 }\n")


def test_resolve_finds_missing_modules():
    source = "flow f() -> str\nuse X from no.such.module\nsteps { return X() }\n"
    assert "unknown-module" not in codes(source)
    assert "unknown-module" in [d.code for d in check_source(source, "t.swarm", resolve=True)]


def test_diagnostics_come_in_source_order():
    source = flow("  a = coder(zz)\n  b = reviewer(yy)\n  return xx")
    lines = [d.line for d in diags(source)]
    assert lines == sorted(lines)


def test_raw_outcomes_handed_to_an_agent_are_a_warning():
    source = flow("  outs = parallel(2) { coder(task) }\n  return reviewer(outs)")
    [d] = [d for d in diags(source) if d.code == "outcomes"]
    assert d.severity == "warning" and "compact(...)" in d.message


def test_a_line_with_several_problems_is_printed_once():
    source = flow_text("  x = nope + nada\n  return x", agents="")
    text = rendered(source)
    assert text.count("x = nope + nada") == 1
    assert text.count("^~~~") == 2


def test_a_long_line_is_cut_around_the_caret():
    padding = ", ".join(["1"] * 400)
    source = flow_text(f"  x = [{padding}, nope, {padding}]\n  return x", agents="")
    lines = rendered(source).splitlines()
    [shown] = [line for line in lines if line.startswith("    ") and "nope" in line]
    assert len(shown) < 200 and shown.strip().startswith("…") and shown.endswith("…")
    caret_line = lines[lines.index(shown) + 1]
    assert shown[caret_line.index("^") : caret_line.index("^") + 4] == "nope"


def test_only_the_first_fifty_problems_are_printed_but_all_are_counted():
    steps = "\n".join(f"  x{i} = nope{i}" for i in range(80))
    source = flow_text(steps, agents="", signature="flow f(task: str)")
    text = rendered(source)
    assert text.count(": error: ") + text.count(": warning: ") == 50
    assert "... and 32 more not shown" in text
    assert text.endswith("80 errors, 2 warnings")


def test_did_you_mean_still_finds_near_misses_among_thousands_of_names():
    steps = "\n".join(f"  value_{i} = {i}" for i in range(3000))
    source = flow_text(steps + "\n  return valeu_1234", agents="")
    [found] = errors(source)
    assert found.message == "unknown name 'valeu_1234'; did you mean 'value_1234'?"


@pytest.mark.parametrize("call", ["int(x)", "round(x)", "clamp(x, 1, x)", "max(x, 2)"])
def test_built_ins_of_numbers_too_big_to_convert_are_checked_not_crashed_on(call):
    huge = "9" * 400  # a float infinity once read
    source = flow_text(f"  x = {huge}\n  y = {call}\n  return y", agents="")
    assert errors(source) == []


def test_an_unknown_output_field_lists_the_fields_an_output_has():
    [d] = errors(flow("  c = coder(task)\n  return c.nope"))
    assert d.message == (
        "an agent's output has no 'nope' (it has text, value, patch, agent, session, state, "
        "reason, ok, detail, usage)"
    )


@pytest.mark.parametrize(
    ("declarations", "words"),
    [
        ("flow g() -> str", "a file declares one flow; 'g' is a second one"),
        ("use has_text from m\nuse has_text from n", "'has_text' is already defined"),
        ("budget tokens 0", "budget 'tokens' must be more than zero"),
        ("budget calls 2.5", "budget 'calls' must be a whole number, not 2.5"),
        ('agent c { model "x" model "y" }', "field 'model' is given twice in agent 'c'"),
        ("agent c { card 3 }", "card takes a string"),
        ("agent c { model 3 }", 'model takes a name such as "gpt-4o-mini"'),
        ('agent c { steps "x" }', "steps takes a count such as 400k or 30"),
        ("agent c { steps 2.5 }", "steps must be a whole number above zero"),
        ("agent c { tools read_file }", "tools takes a list such as [read_file, edit]"),
    ],
)
def test_declaration_misuse(declarations, words):
    source = flow_text("  return task", head=declarations)
    found = [d.message for d in errors(source)]
    assert any(words in m for m in found), found


def test_types_and_defaults_of_inputs_are_checked():
    source = flow_text("  return task", signature="flow f(task: list[strr], n: int = n) -> str")
    found = [d.message for d in errors(source)]
    assert any("unknown type 'strr'" in m for m in found), found
    assert any("the default of 'n' must be a plain value" in m for m in found), found


def test_an_edge_from_an_agent_to_itself_is_a_warning():
    source = flow_text("  return a(task)", agents="agent a {}", edges="edges a -> a")
    assert [(d.code, d.severity) for d in diags(source)] == [("edge", "warning")]


def test_a_card_file_that_is_not_found_is_a_warning(tmp_path):
    source = flow_text("  return c(task)", agents='agent c { card "missing.md" }')
    found = diags(source, base_dir=str(tmp_path))
    assert [d.code for d in found] == ["card"]
    assert "card file 'missing.md' is not next to this file" in found[0].message
