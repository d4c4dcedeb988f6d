"""`swarmflow check` and `run`, through their handlers; exit statuses 0, 1 and 2."""

from __future__ import annotations

import json

import pytest

from swarmflow.cli import build_parser, run_commands

from .helpers import EXAMPLES, flow_text

FLAGSHIP = str(EXAMPLES / "parallel_coder_arbiter.swarm")


def main(argv: list[str]) -> int:
    parser = build_parser()  # every command: the docs' examples use graph as well
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:
        return int(exc.code or 0)
    code: int = args.handler(args)
    return code


@pytest.fixture
def broken(tmp_path):
    path = tmp_path / "broken.swarm"
    path.write_text(flow_text("  x = coder(tsk)\n  return x", agents="agent coder {}"))
    return path


def test_check_clean_files_exit_0_with_one_line_each(capsys):
    files = sorted(EXAMPLES.glob("*.swarm"))
    assert main(["check", *map(str, files)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split(": ok (flow ")[0] for line in lines] == list(map(str, files))
    assert lines[0] == f"{FLAGSHIP}: ok (flow parallel_coder_arbiter: 3 agents, 4 edges)"


def test_check_prints_diagnostics_and_exits_1(broken, capsys):
    assert main(["check", str(broken)]) == 1
    out = capsys.readouterr().out
    assert out.splitlines()[:3] == [
        f"{broken}:6:13: error: unknown name 'tsk'; did you mean 'task'?",
        "      x = coder(tsk)",
        "                ^~~",
    ]


def test_check_warnings_exit_1_unless_allowed(tmp_path, capsys):
    path = tmp_path / "warn.swarm"
    path.write_text(flow_text("  return a(task)", agents="agent a {}\nagent idle {}"))
    assert main(["check", str(path)]) == 1
    assert main(["check", "--allow-warnings", str(path)]) == 0
    last = capsys.readouterr().out.splitlines()[-1]
    assert last == f"{path}: ok with 1 warning (flow f: 2 agents, 0 edges)"


def test_usage_errors_exit_2(tmp_path, capsys):
    assert main(["check"]) == 2
    assert main(["check", str(tmp_path / "missing.swarm")]) == 2
    assert "cannot read" in capsys.readouterr().err
    assert main(["run", FLAGSHIP, "--input", "task=x"]) == 2  # no model chosen
    assert main(["run", FLAGSHIP, "--demo", "--input", "task"]) == 2
    assert main(["run", FLAGSHIP, "--demo", "--input", "nope=1"]) == 2


def test_run_with_the_demo_model(capsys):
    assert main(["run", FLAGSHIP, "--demo", "--input", "task=make the tests pass"]) == 0
    out = capsys.readouterr().out
    assert "status: ok" in out
    output = json.loads(out.split("output: ", 1)[1].splitlines()[0])
    assert set(output) == {"choice", "confidence", "reason"}


def test_run_converts_inputs_and_caps_the_budget(tmp_path, capsys):
    path = tmp_path / "n.swarm"
    path.write_text(flow_text("  return n + 1", signature="flow f(n: int) -> int", agents=""))
    assert main(["run", str(path), "--demo", "--input", "n=41", "--budget-tokens", "10"]) == 0
    assert "output: 42" in capsys.readouterr().out
    assert main(["run", str(path), "--demo", "--input", "n=many"]) == 2


def test_run_of_a_broken_file_exits_1(broken):
    assert main(["run", str(broken), "--demo", "--input", "task=x"]) == 1


def test_a_failed_run_exits_1(tmp_path, capsys):
    path = tmp_path / "fails.swarm"
    path.write_text(flow_text("  xs = []\n  return xs[0]", agents=""))
    assert main(["run", str(path), "--demo", "--input", "task=x"]) == 1
    assert "status: failed" in capsys.readouterr().out


def test_parse_inputs():
    assert run_commands.parse_inputs(["a=1", "b=x=y", "c="]) == {"a": "1", "b": "x=y", "c": ""}
    with pytest.raises(ValueError, match="KEY=VALUE"):
        run_commands.parse_inputs(["novalue"])
