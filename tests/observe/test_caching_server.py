"""The prefix-caching test server: block-granular, chained by prefix, shared across sessions,
bounded with least-recently-used eviction, and reported the way the OpenAI wire format does
(`usage.prompt_tokens_details.cached_tokens`, read into `model_called.tokens_cached`)."""

from __future__ import annotations

import pytest

from benchmarks.cases.caching import PARALLEL, SHARED_TARGET, measure
from swarmflow.caching_server import PrefixCache


def _words(text: str) -> list[str]:
    return text.split()


def test_a_repeated_prompt_is_served_from_the_cache_in_whole_blocks() -> None:
    cache = PrefixCache(block_tokens=4)
    prompt = _words("a b c d e f g h i j")
    assert cache.serve(prompt).cached_tokens == 0
    again = cache.serve(prompt)
    assert again.prompt_tokens == 10 and again.cached_tokens == 8  # two whole blocks
    longer = cache.serve([*prompt, "k", "l", "m"])
    assert longer.cached_tokens == 8


def test_a_block_is_found_only_behind_the_same_prefix() -> None:
    cache = PrefixCache(block_tokens=2)
    cache.serve(_words("a b c d e f"))
    assert cache.serve(_words("x b c d e f")).cached_tokens == 0  # same blocks, other prefix
    assert cache.serve(_words("a b c d x f")).cached_tokens == 4


def test_the_whole_prompt_cached_still_computes_its_last_token() -> None:
    cache = PrefixCache(block_tokens=2)
    cache.serve(_words("a b c d"))
    assert cache.serve(_words("a b c d")).cached_tokens == 2


def test_the_least_recently_used_blocks_are_evicted_first() -> None:
    cache = PrefixCache(block_tokens=2, capacity_blocks=4)
    old, kept = _words("a b c d x"), _words("k l m n x")
    cache.serve(old)
    cache.serve(kept)
    cache.serve(kept)  # used again: now the most recent
    cache.serve(_words("p q r s x"))  # needs room: the oldest blocks go
    assert len(cache.blocks) == 4 and cache.evicted == 2
    assert cache.serve(kept).cached_tokens == 4
    assert cache.serve(old).cached_tokens == 0


@pytest.mark.allow_model_calls
async def test_one_session_reports_what_the_server_cached() -> None:
    one = await measure(1, 8)
    assert one.prompt_tokens > 0 and 0 < one.cached_tokens < one.prompt_tokens
    assert one.share >= 80.0


@pytest.mark.allow_model_calls
async def test_parallel_sessions_first_calls_hit_the_cache_for_their_shared_part() -> None:
    many = await measure(PARALLEL, 3)
    assert len(many.first_shared) == PARALLEL - 1
    assert min(many.first_shared) > 500  # card, tools and task: before the branch part
    assert many.first_share >= SHARED_TARGET


def test_a_body_that_is_not_a_chat_request_gets_one_clear_error() -> None:
    import json
    import urllib.error
    import urllib.request

    from swarmflow.caching_server import CachingServer

    with CachingServer() as server:
        for body in (b"{not json", b"[1, 2]", b'{"messages": 3}'):
            request = urllib.request.Request(f"{server.url}/chat/completions", data=body)
            with pytest.raises(urllib.error.HTTPError) as caught:
                urllib.request.urlopen(request, timeout=10)
            assert caught.value.code == 400
            assert json.loads(caught.value.read())["error"]["message"].startswith("bad request")
        assert server.cache.requests == []
