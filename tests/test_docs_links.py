"""Every link between the README and the docs leads somewhere, and the snippets the reference
pages hold compile with imports that exist."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from tests.docs_snippets import ROOT, blocks

PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
LINK = re.compile(r"\]\(([^)\s]+)\)")


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def _anchors(page: Path) -> set[str]:
    text = page.read_text(encoding="utf-8")
    return {_slug(m.group(1)) for m in re.finditer(r"^#+ (.+)$", text, re.MULTILINE)}


def _prose(page: Path) -> str:
    """The page without its code blocks (a `](x)` inside code is not a link)."""
    return re.sub(r"^```.*?^```$", "", page.read_text(encoding="utf-8"), flags=re.M | re.S)


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_relative_link_resolves(page: Path) -> None:
    for target in LINK.findall(_prose(page)):
        if re.match(r"[a-z]+:", target):  # https:, mailto:
            continue
        path, _, anchor = target.partition("#")
        linked = (page.parent / path).resolve() if path else page
        assert linked.exists(), f"{page.name}: link to {target} leads nowhere"
        if anchor and linked.suffix == ".md":
            assert anchor in _anchors(linked), f"{page.name}: no heading #{anchor} in {path}"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_python_snippets_compile_and_their_imports_exist(page: Path) -> None:
    for block in blocks(page):
        if block.language != "python":
            continue
        where = f"{page.name}:{block.line}"
        compile(block.code, where, "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
        for node in ast.parse(block.code).body:
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("swarmflow"):
                try:
                    exec(compile(ast.Module([node], []), where, "exec"), {})
                except ModuleNotFoundError as missing:  # an optional extra, e.g. `otel`
                    assert not (missing.name or "").startswith("swarmflow"), (where, missing)
