"""The README's quick start and docs/getting-started.md say the same thing: the same set-up
commands, the same extras (the ones `make run` really installs), `make` targets that exist,
and `swarmflow` command lines whose commands and options exist. Drift between the two pages,
or between either and the Makefile or the CLI, fails here."""

from __future__ import annotations

import re
import shlex

import pytest

from swarmflow.cli import main
from tests.docs_snippets import ROOT, blocks

README = ROOT / "README.md"
GUIDE = ROOT / "docs" / "getting-started.md"
MAKEFILE = ROOT / "Makefile"


def _section(path: object, heading: str) -> str:
    """The text of the section of `path` whose `## ` heading starts with `heading`."""
    text = ROOT.joinpath(str(path)).read_text(encoding="utf-8")
    found = [s for s in text.split("\n## ") if s.startswith(heading)]
    assert len(found) == 1, f"{path}: no single section '## {heading}'"
    return found[0]


def _commands(text: str) -> list[str]:
    """The command lines of the `sh` blocks in `text`, comments dropped."""
    found = re.findall(r"```sh\n(.*?)```", text, re.S)
    lines = [ln.split("#")[0].strip() for block in found for ln in block.splitlines()]
    return [ln for ln in lines if ln]


def _made_extras() -> list[str]:
    """The extras the Makefile's shared environment installs (`make run`, `make test`)."""
    found = re.search(r"pip install -q -e '\.\[([a-z,]+)\]'", MAKEFILE.read_text())
    assert found is not None, "the Makefile installs no extras into .venv"
    return found.group(1).split(",")


def _named_extras(prose: str) -> list[str]:
    """The extras a sentence `... with its `a`, `b` and `c` extras` names, in its order."""
    found = re.search(r"with its ((?:`[a-z]+`(?:, | and |,\s+))*`[a-z]+`) extras", prose, re.S)
    assert found is not None, "names no extras"
    return re.findall(r"`([a-z]+)`", found.group(1))


QUICK_START = _section("README.md", "Quick start")
SET_UP = _section("docs/getting-started.md", "1. Set up")


def test_the_guide_sets_up_with_the_quick_starts_commands() -> None:
    guide, readme = _commands(SET_UP), _commands(QUICK_START)
    assert guide and set(guide) <= set(readme), (
        f"getting-started's set-up {guide} is not the README's quick start {readme}"
    )


def test_both_pages_name_the_extras_make_run_installs() -> None:
    made = _made_extras()
    assert _named_extras(QUICK_START) == made
    assert _named_extras(SET_UP) == made


def test_every_make_target_shown_exists() -> None:
    targets = set(re.findall(r"^([a-z][a-z-]*):", MAKEFILE.read_text(), re.M))
    for page in (QUICK_START, SET_UP, GUIDE.read_text(encoding="utf-8")):
        for line in _commands(page):
            if line.startswith("make "):
                assert set(line.split()[1:]) <= targets, f"no such make target: {line!r}"


def _usage(words: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    assert main([*words, "--help"]) == 0, f"`swarmflow {' '.join(words)} --help` failed"
    return capsys.readouterr().out


@pytest.mark.parametrize("page", [README, GUIDE], ids=lambda p: p.name)
def test_every_swarmflow_command_shown_parses(
    page: object, capsys: pytest.CaptureFixture[str]
) -> None:
    """Each `swarmflow ...` line of the page: its command (and subcommand) answer `--help`,
    and every option it uses is in that help."""
    lines = [
        ln
        for b in blocks(ROOT.joinpath(str(page)))
        if b.language == "sh"
        for ln in (x.split("  #")[0].strip() for x in b.code.splitlines())
        if ln.startswith("swarmflow ")
    ]
    assert lines
    for line in lines:
        words = shlex.split(line.replace("<", "").replace(">", ""))[1:]
        command = [w for w in words[:2] if not w.startswith("-")][:1]
        usage = _usage(command, capsys)
        if len(words) > 1 and re.search(rf"^    {re.escape(words[1])}\b", usage, re.M):
            command = words[:2]
            usage = _usage(command, capsys)
        for option in re.findall(r"(?<![\w-])--[a-z][a-z-]*", line):
            assert option in usage, (
                f"{page}: {line!r}: `swarmflow {' '.join(command)}` has no {option}"
            )
