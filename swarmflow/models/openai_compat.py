"""The adapter for OpenAI-compatible chat-completions endpoints (OpenAI, vLLM, Ollama, llama.cpp).

The `openai` package is imported only when the first client is built: it takes about half a
second to import, and swarmflow's cold import must stay fast.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import replace
from types import TracebackType
from typing import TYPE_CHECKING, Any, Self, cast

import anyio
import anyio.lowlevel

from swarmflow.core.capabilities import Capabilities, capabilities_for
from swarmflow.core.errors import ConfigError, ModelResponseError, ModelUnavailable
from swarmflow.core.messages import ModelRequest, ModelResponse
from swarmflow.models._modes import Force, ModeChange, ModePinnedError, Plan, WireModes
from swarmflow.models._retry import (
    Endpoint,
    Retryable,
    backoff_delay,
    classify,
    server_message,
)
from swarmflow.models._stream import StreamAssembler
from swarmflow.models._timeouts import AttemptTimeouts
from swarmflow.models._wire import build_payload, response_from_body

if TYPE_CHECKING:
    import ssl

    from openai import AsyncOpenAI

DEFAULT_BASE_URL = "https://api.openai.com/v1"
NO_KEY = "sk-no-key"  # local servers ignore the key, but the SDK insists on one

OnRetry = Callable[[int, str, float], object]
OnModeChange = Callable[[str, ModeChange], object]
"""Told the endpoint (`model at base_url`) and the change, once per step-down."""


class _Adapted(Retryable):
    """The request was changed to suit the server; sent again at once, not counted as a try."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason, 0.0)


class OpenAIModel:
    """A `Model` served by any OpenAI-compatible chat-completions endpoint.

    `timeout` is how long an attempt may go without progress. A streamed call (`stream=True`)
    fails only when no bytes arrive for `timeout` seconds (default 60), the wait for the first
    byte included, so a slow but steady answer may take as long as it needs. A plain call shows
    no progress until its answer is whole, so there `timeout` bounds each attempt as a whole
    (default 300). `total_timeout` (default None: no cap) bounds every attempt as a whole in
    both modes. A timed-out attempt is retried like a 5xx, and its reason names the option to
    raise.

    `force_tool_choice` asks for a tool call on every call that offers tools (True), or only on
    the first call of each turn ("first": look before answering, then answer freely).
    `capabilities` overrides what the capability table says about this model: how structured
    answers and forced tool calls are asked for (`swarmflow.core.capabilities`), as a
    `Capabilities` or a mapping naming only what changes. A form the server rejects is given
    up once for this endpoint, and `on_mode_change` is told (a run records it as an
    `output_mode_stepped_down` event); `pin_modes=True` fails such a call instead.
    """

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        timeout: float | None = None,
        total_timeout: float | None = None,
        max_retries: int = 4,
        backoff: float = 0.5,
        stream: bool = False,
        on_retry: OnRetry | None = None,
        extra_body: Mapping[str, object] | None = None,
        force_tool_choice: Force = False,
        capabilities: Capabilities | Mapping[str, str] | None = None,
        pin_modes: bool = False,
    ) -> None:
        self.name = model
        given_url = base_url or os.environ.get("OPENAI_BASE_URL")
        given_key = api_key or os.environ.get("OPENAI_API_KEY")
        if not given_url and not given_key:
            raise ConfigError(
                f"model {model!r} has no endpoint: set OPENAI_API_KEY to use OpenAI, or "
                "OPENAI_BASE_URL to use a local server (llama.cpp, vLLM, Ollama), "
                "or pass base_url= / api_key="
            )
        self.base_url = (given_url or DEFAULT_BASE_URL).rstrip("/")
        key = given_key or NO_KEY
        self._endpoint = Endpoint(model, self.base_url, key)
        self._timeouts = AttemptTimeouts.of(
            stream=stream, timeout=timeout, total_timeout=total_timeout
        )
        self.max_retries = max(max_retries, 0)
        self.backoff = backoff
        self.stream = stream
        self.on_retry = on_retry
        self.on_delta: Callable[[str], None] | None = None
        """Called with each piece of text as a streamed answer arrives."""
        self.extra_body = dict(extra_body or {})
        self.force_tool_choice = force_tool_choice
        self.on_mode_change: OnModeChange | None = None
        """Called once when this endpoint steps down from a form its server rejected."""
        self.endpoint_profile: dict[str, object] | None = None
        """What a probe of the endpoint found (`models.probe`); a run records it."""
        try:
            found = capabilities_for(model, self.base_url, capabilities)
            self.modes = WireModes(found, pinned=pin_modes)
        except (TypeError, ValueError) as exc:
            raise ConfigError(f"model {model!r}: {exc}") from None
        self._token_param = "max_tokens"
        self._key = key
        self._ask_stream_usage = True
        self._client: AsyncOpenAI | None = None
        self._client_loop: object = None

    @property
    def timeout(self) -> float:
        """Seconds of silence a streamed attempt tolerates; the length of a plain attempt."""
        return self._timeouts.timeout

    @property
    def total_timeout(self) -> float | None:
        """The cap on an attempt as a whole, or None."""
        return self._timeouts.total

    def __repr__(self) -> str:
        return f"OpenAIModel({self.name!r}, base_url={self.base_url!r}, stream={self.stream})"

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close the HTTP connections; the next call opens new ones."""
        client, self._client = self._client, None
        if client is not None:
            await client.close()

    def wire_payload(self, request: ModelRequest, plan: Plan | None = None) -> dict[str, object]:
        """The JSON body this adapter sends for `request`."""
        plan = plan or self.modes.plan(request, force=self.force_tool_choice)
        payload = build_payload(request, model=self.name, token_param=self._token_param)
        self.modes.shape(payload, request, plan)
        if self.stream:
            payload["stream"] = True
            if self._ask_stream_usage:
                payload["stream_options"] = {"include_usage": True}
        return {**payload, **self.extra_body}

    def secrets(self) -> list[str]:
        """Values an event sink must never show (the API key)."""
        return [self._key] if self._key and self._key != NO_KEY else []

    async def complete(self, request: ModelRequest) -> ModelResponse:
        """Answer one request, retrying rate limits, server errors and timeouts."""
        attempts = self.max_retries + 1
        last = ""
        attempt = 1
        while attempt <= attempts:
            try:
                return await self._attempt(request)
            except _Adapted as exc:  # one-way changes, so this cannot loop for ever
                await self._report(attempt, exc.reason, 0.0)
            except Retryable as exc:
                last = exc.reason
                if attempt < attempts:
                    await self._pause(attempt, exc)
                attempt += 1
        raise ModelUnavailable(
            f"model {self.name!r} at {self.base_url} failed after {attempts} attempts; "
            f"last error: {last}"
        )

    async def _pause(self, attempt: int, exc: Retryable) -> None:
        """Report the retry and wait out the backoff."""
        delay = backoff_delay(attempt, self.backoff, exc.retry_after)
        await self._report(attempt, exc.reason, delay)
        await anyio.sleep(delay)

    async def _report(self, attempt: int, reason: str, delay: float) -> None:
        """Tell `on_retry` (a `model_retried` event in a run) why the request goes again."""
        if self.on_retry is not None:
            result = self.on_retry(attempt, reason, delay)
            if isinstance(result, Awaitable):
                await result

    async def _attempt(self, request: ModelRequest) -> ModelResponse:
        """One bounded attempt; failures come out as swarmflow errors or `Retryable`."""
        import openai

        plan = self.modes.plan(request, force=self.force_tool_choice)
        try:
            with anyio.fail_after(self._timeouts.whole()):
                return await self._call(request, plan)
        except TimeoutError:
            raise Retryable(self._timeouts.too_long()) from None
        except openai.APITimeoutError:  # a connect, write or read waited `timeout` in vain
            raise Retryable(self._timeouts.silent()) from None
        except openai.OpenAIError as exc:
            try:
                adapted = await self._adapt(exc, plan)
            except ModePinnedError as pinned:
                raise ModePinnedError(self._endpoint.scrub(pinned.message)) from None
            if adapted is not None:
                raise _Adapted(self._endpoint.scrub(adapted)) from None
            raise classify(exc, self._endpoint) from None

    async def _adapt(self, exc: Exception, plan: Plan) -> str | None:
        """Drop or change request fields the server rejects; the reason when something changed."""
        import openai

        # llama-cpp-python answers 500 to a request field it does not know, others 400 or 422.
        if not isinstance(exc, openai.APIStatusError) or exc.status_code not in (400, 422, 500):
            return None
        text = server_message(exc.body, exc.message)[0]  # the message may leave the body out
        lowered = text.lower()
        if "max_completion_tokens" in lowered and self._token_param == "max_tokens":
            self._token_param = "max_completion_tokens"
            return f"adapted the request to the server: {text}"
        if "stream_options" in lowered and self.stream and self._ask_stream_usage:
            self._ask_stream_usage = False  # usage is then estimated
            return f"adapted the request to the server: {text}"
        stepped = self.modes.step_down(plan, text)
        if stepped is None:
            return None
        reason, change = stepped
        if change is not None and self.on_mode_change is not None:
            scrubbed = replace(change, reason=self._endpoint.scrub(change.reason))
            told = self.on_mode_change(f"{self.name} at {self.base_url}", scrubbed)
            if isinstance(told, Awaitable):
                await told
        return reason

    async def _call(self, request: ModelRequest, plan: Plan) -> ModelResponse:
        """Send the request once."""
        payload = self.wire_payload(request, plan)
        if self.stream:
            response = await self._streamed(payload, request)
        else:
            response = await self._plain(payload, request)
        return self.modes.read(response, request, plan)

    async def _plain(self, payload: dict[str, object], request: ModelRequest) -> ModelResponse:
        """A non-streamed call, decoded here so that odd bodies give clear errors."""
        model, messages, rest = _split(payload)
        client = await self._get_client()
        raw = await client.chat.completions.with_raw_response.create(
            model=model, messages=messages, extra_body=rest
        )
        text = raw.http_response.text
        try:
            body = json.loads(text)
        except ValueError:
            kind = raw.http_response.headers.get("content-type", "no content type")
            raise Retryable(
                f"HTTP {raw.http_response.status_code} with a body that is not JSON ({kind}): "
                f"{self._endpoint.scrub(text[:200])!r}"
            ) from None
        try:
            return response_from_body(body, request, model=self.name)
        except ModelResponseError as exc:  # JSON, but no usable answer: a server fault
            raise Retryable(f"unusable answer: {self._endpoint.scrub(exc.message)}") from None

    async def _streamed(self, payload: dict[str, object], request: ModelRequest) -> ModelResponse:
        """A streamed call, assembled chunk by chunk."""
        model, messages, rest = _split(payload)
        rest.pop("stream", None)
        client = await self._get_client()
        stream = await client.chat.completions.create(
            model=model, messages=messages, stream=True, extra_body=rest
        )
        assembler = StreamAssembler(model=self.name)
        try:
            async with stream:
                async for chunk in stream:
                    seen = len(assembler.text)
                    assembler.feed(chunk.to_dict())
                    if self.on_delta is not None:
                        for piece in assembler.text[seen:]:
                            self.on_delta(piece)
        except ValueError as exc:  # an SSE event whose data is not JSON
            raise Retryable(f"a broken stream event: {self._endpoint.scrub(str(exc))}") from None
        if assembler.reason is None:
            # Every server ends a whole answer with a finish reason (then [DONE]); a stream
            # that stops before it was cut off, and its half answer must not pass as whole.
            raise Retryable(
                f"the stream ended without a finish reason after {assembler.chunks} chunks "
                "(a torn response)"
            )
        return assembler.result(request)

    async def _get_client(self) -> AsyncOpenAI:
        """The SDK client for the running event loop, built on first use."""
        loop = anyio.lowlevel.current_token().native_token
        if self._client is not None and self._client_loop is not loop:
            # Pooled connections belong to the loop that opened them, which may be closed by
            # now; then closing fails, and the stale pool is dropped all the same.
            stale, self._client = self._client, None
            with contextlib.suppress(Exception):
                await stale.close()
        if self._client is None:
            import openai

            # The transport's read timeout is per read: for a stream, the silence deadline.
            timeout = self._timeouts.transport()
            self._client = openai.AsyncOpenAI(
                api_key=self._endpoint.api_key,
                base_url=self.base_url,
                timeout=timeout,
                max_retries=0,  # retries happen here, so each one can be reported
                http_client=openai.DefaultAsyncHttpx2Client(
                    verify=_shared_ssl_context(), timeout=timeout
                ),
            )
            self._client_loop = loop
        return self._client


@functools.cache
def _shared_ssl_context() -> ssl.SSLContext:
    """One TLS context for all clients: loading the CA store costs about 40 ms each time."""
    import httpx2

    return httpx2.create_ssl_context()


def _split(payload: dict[str, object]) -> tuple[str, Any, dict[str, object]]:
    """Model and messages for the SDK's typed arguments; the rest travels as extra_body."""
    rest = dict(payload)
    model = str(rest.pop("model"))
    messages = cast(Any, rest.pop("messages"))
    return model, messages, rest


__all__ = ["OpenAIModel"]
