"""Fingerprints: any shared run of MATCH_CHARS letters and digits is found, whatever the case,
spacing, punctuation or quoting around it, and shorter runs never are."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from swarmflow.core.fingerprint import MATCH_CHARS, FingerprintIndex, normalize

WORDS = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789 ", min_size=MATCH_CHARS, max_size=400)
NOISE = st.text(alphabet=" \t\n.,;:!?'\"()[]{}-_*#", max_size=3)
OTHER = st.text(alphabet="QRSTUVWXYZ", max_size=200)  # letters the product never holds


def _index(product: str, owner: str = "coder") -> FingerprintIndex:
    index = FingerprintIndex()
    index.add(owner, product)
    return index


def _never(owner: str) -> bool:
    return False


@settings(max_examples=150, deadline=None)
@given(product=WORDS, data=st.data())
def test_every_excerpt_of_the_threshold_is_caught(product: str, data: st.DataObject) -> None:
    norm = normalize(product)
    if len(norm) < MATCH_CHARS:
        return
    start = data.draw(st.integers(0, len(norm) - MATCH_CHARS))
    end = data.draw(st.integers(start + MATCH_CHARS, len(norm)))
    excerpt = ""
    for ch in norm[start:end]:  # re-spaced, re-cased, punctuated
        upper = data.draw(st.booleans())
        excerpt += (ch.upper() if upper else ch) + data.draw(NOISE)
    text = data.draw(OTHER) + f' "{excerpt}" ' + data.draw(OTHER)
    assert _index(product).unreached(text, _never) == ["coder"]


@settings(max_examples=100, deadline=None)
@given(product=WORDS, other=OTHER)
def test_unrelated_text_is_not_caught(product: str, other: str) -> None:
    assert _index(product).unreached(other, _never) == []


def test_the_threshold_is_exact() -> None:
    token = "k" + "0123456789abcdefghijklmnop"  # 27 distinct characters
    index = _index(f"zz {token} zz")
    assert index.unreached(f"say {token[: MATCH_CHARS - 1]}!", _never) == []
    assert index.unreached(f"say {token[:MATCH_CHARS]}!", _never) == ["coder"]


def test_what_the_agent_was_given_is_not_its_own() -> None:
    task = "please implement the add function in calculator module"
    index = FingerprintIndex()
    index.add("coder", f"Sure. {task}. Also I renamed helper_value_cache_size.", given=task)
    assert index.unreached(f"Task: {task}", _never) == []
    assert index.unreached("look: helper value cache size renamed", _never) == ["coder"]


def test_a_relay_is_co_owned_and_excused_along_an_allowed_edge() -> None:
    code = "def add(a, b): return a - b  # wrong sign in the result"
    index = FingerprintIndex()
    index.add("coder", code)
    index.add("reviewer", f"The line {code} is wrong.", given=f"From coder: {code}")
    only_reviewer = lambda owner: owner == "reviewer"  # noqa: E731
    assert index.unreached(f"Summary: {code}", only_reviewer) == []
    assert index.unreached(f"Summary: {code}", _never) == ["coder", "reviewer"]
    longer = f"{code} and then the coder wrote some_more_private_helper_text"
    index.add("coder", longer)
    assert index.unreached(longer, only_reviewer) == ["coder"]  # the rest is not relayed


def test_repetitive_and_huge_products_stay_bounded() -> None:
    index = FingerprintIndex()
    index.add("coder", "ab" * 50_000)
    assert index.unreached("x" + "ab" * 15 + "x", _never) == ["coder"]
    assert index.owners("abab") == set()
