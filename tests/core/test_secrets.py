"""The one secret policy: names, values, scrubbing, and parts of a secret at a cut edge."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from swarmflow.core.secrets import (
    MIN_PART,
    REDACTED,
    Redactor,
    is_secret,
    public_environment,
    secret_values,
)
from swarmflow.models._retry import Endpoint
from swarmflow.tools.shell import scrubbed_env

SECRET = "sk-live-9f8e7d6c5b4a3f2e1d0c"
ENV = {
    "OPENAI_API_KEY": SECRET,
    "X_AUTH": "auth-value-123456",
    "GH_TOKEN": "ghp_abcdefghijklmnop",
    "DB_PASSWD": "hunter2hunter2",
    "DATABASE_URL": "postgres://app:s3cr3t-pa55word@db:5432/x",
    "HOME": "/home/someone",
    "SHORT_KEY": "1",
}


def test_one_policy_for_names_and_values() -> None:
    for name in ("OPENAI_API_KEY", "X_AUTH", "GH_TOKEN", "DB_PASSWD", "DATABASE_URL"):
        assert is_secret(name, ENV[name]), name
    assert not is_secret("HOME", ENV["HOME"])
    values = secret_values(ENV)
    assert "s3cr3t-pa55word" in values and SECRET in values and "1" not in values
    assert set(public_environment(ENV)) == {"HOME"}


def test_the_shell_and_the_log_agree(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """`X_AUTH` was scrubbed from the log but handed to the shell; now it is neither."""
    env = scrubbed_env(ENV)
    assert "X_AUTH" not in env and "DATABASE_URL" not in env and env["HOME"] == "/home/someone"
    log = Redactor(secret_values(ENV))
    assert "auth-value-123456" not in log.scrub("X_AUTH=auth-value-123456")


def test_model_error_messages_use_the_policy(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("X_AUTH", "auth-value-123456")
    endpoint = Endpoint("m", "http://localhost", api_key=SECRET)
    shown = endpoint.scrub(f"bad key {SECRET}, header auth-value-123456")
    assert SECRET not in shown and "auth-value" not in shown and REDACTED in shown


def test_scrubs_raw_and_json_escaped_forms() -> None:
    quoted = 'pa"ss\\word-123'
    redactor = Redactor([SECRET, quoted])
    line = json.dumps({"a": f"key={SECRET}", "b": quoted})
    assert SECRET not in redactor.scrub(line)
    assert json.dumps(quoted)[1:-1] not in redactor.scrub(line)
    assert redactor.scrub_bytes(line.encode()).count(REDACTED.encode()) == 2


@given(
    before=st.text(max_size=30),
    cut=st.integers(min_value=MIN_PART, max_value=len(SECRET) - 1),
    closing=st.sampled_from(["", '"', "…", "..."]),
)
def test_a_secret_cut_at_the_end_leaves_no_part(before: str, cut: int, closing: str) -> None:
    redactor = Redactor([SECRET])
    shown = redactor.scrub(before + SECRET[:cut] + closing)
    assert SECRET[:cut] not in shown[len(before) - 0 :] or SECRET[:cut] in before


@given(cut=st.integers(min_value=MIN_PART, max_value=len(SECRET) - 1), after=st.text(max_size=30))
def test_a_secret_cut_at_the_start_leaves_no_part(cut: int, after: str) -> None:
    redactor = Redactor([SECRET])
    tail = SECRET[-cut:]
    assert redactor.scrub(tail + after).startswith(REDACTED)
    line = json.dumps({"preview": tail + after})
    assert tail not in redactor.scrub(line)


@given(text=st.text(max_size=200), limit=st.integers(min_value=0, max_value=250))
def test_a_preview_never_holds_part_of_a_secret(text: str, limit: int) -> None:
    redactor = Redactor([SECRET])
    full = f"{text}{SECRET}{text}"
    for size in (limit, len(text) + MIN_PART, len(text) + len(SECRET) - 1):
        cut = redactor.preview(full, size)
        assert not any(SECRET[:n] in cut for n in range(MIN_PART, len(SECRET) + 1)
                       if SECRET[:n] not in text)  # fmt: skip
        assert redactor.scrub(full[:size]).count(SECRET[:MIN_PART]) <= text.count(
            SECRET[:MIN_PART]
        )
