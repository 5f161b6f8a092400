"""The redaction rules applied to content recorded in spans."""

from __future__ import annotations

import json
import re
from typing import Any

import msgspec
import pytest

from interpose import Redactor, ToolResult

AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"

# (text with a secret, what must remain of it)
SECRETS = [
    ("key sk-ant-api03-" + "a1B2" * 10 + " end", "key [REDACTED] end"),
    ("OPENAI_API_KEY=sk-proj-" + "Z" * 30, "OPENAI_API_KEY=[REDACTED]"),
    ("token ghp_" + "x" * 36, "token [REDACTED]"),
    ("github_pat_" + "A1_" * 20, "[REDACTED]"),
    ("glpat-" + "q" * 20, "[REDACTED]"),
    ("xoxb-123456789012-abcdefghij", "[REDACTED]"),
    ("sk_live_" + "4" * 24, "[REDACTED]"),
    ("AIza" + "S" * 35, "[REDACTED]"),
    ("hf_" + "h" * 34, "[REDACTED]"),
    ("id AKIAIOSFODNN7EXAMPLE here", "id [REDACTED] here"),
    (f"aws_secret_access_key = {AWS_SECRET}", "aws_secret_access_key = [REDACTED]"),
    (
        "jwt eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0."
        "dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
        "jwt [REDACTED]",
    ),
    ("Authorization: Bearer abcdef0123456789abcdef", "Authorization: Bearer [REDACTED]"),
    ("password=hunter2hunter2 next", "password=[REDACTED] next"),
    ('{"api_key": "0123456789abcdef"}', '{"api_key": "[REDACTED]"}'),
    (
        "-----BEGIN RSA PRIVATE KEY-----\nMIIEow\nabc\n-----END RSA PRIVATE KEY-----\nafter",
        "[REDACTED]\nafter",
    ),
    ("-----BEGIN OPENSSH PRIVATE KEY-----\ntruncated", "[REDACTED]"),
]

HARMLESS = [
    "ls -la /tmp",
    "the password policy says 12 characters",
    "sk-short",
    "Bearer token is described in RFC 6750",
    "AKIA is a prefix",
    "eyJ alone",
]


@pytest.mark.parametrize(("text", "expected"), SECRETS)
def test_default_patterns_mask_the_secret(text: str, expected: str) -> None:
    assert Redactor().redact_text(text) == expected


@pytest.mark.parametrize("text", HARMLESS)
def test_harmless_text_is_untouched(text: str) -> None:
    assert Redactor().redact_text(text) == text


def test_sensitive_keys_are_masked_whatever_their_value() -> None:
    value = {
        "Authorization": "Basic dXNlcjpwYXNz",
        "X-Api-Key": "short",
        "nested": [{"password": "pw", "user": "me"}, ("client-secret", 3)],
        "token": "",
        "count": 3,
    }
    assert Redactor(keys={"x-api-key"}).redact(value) == {
        "Authorization": "[REDACTED]",
        "X-Api-Key": "[REDACTED]",
        "nested": [{"password": "[REDACTED]", "user": "me"}, ["client-secret", 3]],
        "token": "",  # nothing to hide
        "count": 3,
    }


def test_custom_patterns_mask_and_the_secret_group_limits_it() -> None:
    redactor = Redactor([r"ticket-\d{6}", re.compile(r"customer=(?P<secret>\w+)")], mask="***")
    assert redactor.redact_text("ticket-123456 customer=alice") == "*** customer=***"


def test_provider_api_key_headers_are_masked_by_default() -> None:
    headers = {
        "X-Api-Key": "sk-ant-short",
        "x-goog-api-key": "g",
        "Api-Key": "a",
        "Proxy-Authorization": "Basic x",
        "Content-Type": "application/json",
    }
    assert Redactor().redact(headers) == {
        "X-Api-Key": "[REDACTED]",
        "x-goog-api-key": "[REDACTED]",
        "Api-Key": "[REDACTED]",
        "Proxy-Authorization": "[REDACTED]",
        "Content-Type": "application/json",
    }


def test_defaults_can_be_left_out() -> None:
    redactor = Redactor([r"internal"], defaults=False)
    assert redactor.redact({"password": "x", "note": "internal sk-ant-api03-" + "a" * 40}) == {
        "password": "x",
        "note": "[REDACTED] sk-ant-api03-" + "a" * 40,
    }


def test_structs_and_unencodable_objects_become_redacted_json() -> None:
    class Opaque:
        def __repr__(self) -> str:
            return "<Opaque password=letmein123>"

    result = ToolResult(output={"body": "Bearer " + "t" * 20, "handle": Opaque()})
    encoded: dict[str, Any] = json.loads(Redactor().to_json(result))
    assert encoded == {
        "output": {"body": "Bearer [REDACTED]", "handle": "<Opaque password=[REDACTED]"},
        "is_error": False,
        "status": "ok",
        "details": {},
    }


def test_redact_returns_copies() -> None:
    args = {"password": "pw", "list": ["sk-ant-api03-" + "b" * 30]}
    snapshot = msgspec.json.encode(args)
    Redactor().redact(args)
    assert msgspec.json.encode(args) == snapshot


def test_bad_pattern_raises() -> None:
    with pytest.raises(re.error):
        Redactor(["(unclosed"])


@pytest.mark.parametrize(
    "text",
    [
        "DB_PASSWORD=correct-horse-battery",
        "POSTGRES_PASSWORD: correct-horse-battery",
        "MY_API_KEY=abcdef123456",
        "GITHUB_TOKEN=abcdef123456",
        "export SECRET='abcdef123456'",
    ],
)
def test_prefixed_assignments_are_masked(text: str) -> None:
    redacted = Redactor().redact_text(text)
    assert redacted.endswith(("[REDACTED]", "[REDACTED]'")), redacted
    assert "abcdef123456" not in redacted
    assert "correct-horse-battery" not in redacted


def test_a_secret_after_a_rewritten_one_is_still_found() -> None:
    # the case-insensitive hints are recomputed once a pattern has rewritten the text
    text = "sk-ant-api03-" + "a" * 30 + " and Bearer " + "b" * 20
    assert Redactor().redact_text(text) == "[REDACTED] and Bearer [REDACTED]"
