"""The detector's API: scan offsets, redact, PII selection, scan_args paths, .env reading."""

from __future__ import annotations

import pytest

from interpose.secrets import (
    MASK,
    PII_KINDS,
    Finding,
    SecretMatch,
    env_secrets,
    parse_env,
    redact,
    scan,
    scan_args,
)

# fakes built at run time (random-looking, never a real key)
GITHUB = "ghp_" + "q7Rk2LmZ9xTb" * 3
OPENAI = "sk-proj-" + "Vb3nQ8rTz1Lk" * 4
AWS_ID = "AKIA" + "Z3MBTQ7KXPL4VW2N"


def test_matches_carry_kind_offsets_and_value() -> None:
    text = f"token {GITHUB} and key {OPENAI}."

    matches = scan(text)

    assert [m.kind for m in matches] == ["github", "openai"]
    for match in matches:
        assert text[match.start : match.end] == match.value
        assert match.pii is False


def test_redact_masks_each_match_and_keeps_the_rest() -> None:
    text = f"a {GITHUB} b {AWS_ID} c"

    assert redact(text, scan(text)) == f"a {MASK} b {MASK} c"
    assert redact(text, scan(text), "***") == "a *** b *** c"
    assert redact("clean", ()) == "clean"


@pytest.mark.parametrize(
    "text",
    ["", "short", "ls -la /tmp", "The agent opened a pull request.", "x" * 4000],
)
def test_clean_text_has_no_matches(text: str) -> None:
    assert scan(text) == ()
    assert scan(text, pii=True) == ()


def test_pii_is_off_by_default_and_selectable_by_kind() -> None:
    text = "write to bob@example.com or call +1 415 555 2671"

    assert scan(text) == ()
    assert {m.kind for m in scan(text, pii=True)} == {"email", "phone"}
    assert [m.kind for m in scan(text, pii=["email"])] == ["email"]
    assert [m.kind for m in scan(text, pii="phone")] == ["phone"]
    assert all(m.pii for m in scan(text, pii=True))
    assert {"email", "phone", "iban", "card", "us-ssn"} == PII_KINDS


def test_an_unknown_pii_kind_is_an_error() -> None:
    with pytest.raises(ValueError, match="unknown PII kinds \\['postcode'\\]"):
        scan("write to bob@example.com", pii=["postcode"])
    with pytest.raises(ValueError, match="postcode"):
        scan("short", pii=["postcode"])


def test_overlapping_recognizers_keep_the_longest_match() -> None:
    # the generic rule sees the same value under a key-like name: the provider kind wins
    assert [m.kind for m in scan(f"GITHUB_TOKEN={GITHUB}")] == ["github"]
    # a password in a URL is not the start of an email address
    url = "postgres://app:Tr0ub4dor-x9@db.example.com/app"
    assert [(m.kind, m.value) for m in scan(url, pii=True)] == [("url-password", "Tr0ub4dor-x9")]


def test_scan_args_walks_nested_arguments_with_paths() -> None:
    args = {
        "url": "https://api.example.com/upload",
        "headers": {"Authorization": "Bearer Zk3f9QmX2pL8vR4tYb7W", "Accept": "*/*"},
        "body": ["hello", {"note": f"creds {AWS_ID}"}],
        "api_key": "Q2h9LmX4pT7vR1sZ",
        "password": "correct-horse-battery",
        "count": 3,
    }

    findings = scan_args(args)

    assert [(f.path, f.match.kind) for f in findings] == [
        ("headers.Authorization", "bearer"),
        ("body.1.note", "aws-access-key"),
        ("api_key", "generic-secret"),
        ("password", "generic-secret"),
    ]
    assert findings[2] == Finding(
        "api_key", SecretMatch("generic-secret", 0, 16, "Q2h9LmX4pT7vR1sZ")
    )


def test_scan_args_leaves_placeholders_and_plain_values_alone() -> None:
    args = {"api_key": "YOUR_API_KEY", "password": "", "token": "${TOKEN}", "to": ["a@b"]}

    assert scan_args(args) == ()
    assert scan_args("plain text") == ()
    assert scan_args(42) == ()


def test_scan_args_finds_pii_when_asked() -> None:
    args = {"to": "mallory@evil.example", "iban": "DE89 3704 0044 0532 0130 00"}

    assert scan_args(args) == ()
    assert [(f.path, f.match.kind) for f in scan_args(args, pii=True)] == [
        ("to", "email"),
        ("iban", "iban"),
    ]


ENV = "\n".join(
    [
        "# the app's settings",
        "export DATABASE_PASSWORD='s3cret-Passw0rd'",
        'STRIPE_KEY="sk_live_' + "Hx8Kq2Lm9Zr4Tb7Wc1Vd" + '"',
        "DEBUG=true",
        "PORT=8080",
        "WEBHOOK_SALT=Zk3f9QmX2pL8vR4tYb7WqE  # an unnamed random value",
        "API_TOKEN=",
        "GREETING=hello world",
        "CALLBACK=https://example.com/cb",
        'MULTI="line one\\nline two"',
    ]
)


def test_parse_env_reads_every_pair() -> None:
    pairs = parse_env(ENV)

    assert pairs["DATABASE_PASSWORD"] == "s3cret-Passw0rd"
    assert pairs["DEBUG"] == "true"
    assert pairs["API_TOKEN"] == ""
    assert pairs["WEBHOOK_SALT"] == "Zk3f9QmX2pL8vR4tYb7WqE"
    assert pairs["MULTI"] == "line one\nline two"
    assert "# the app's settings" not in pairs


def test_env_secrets_keeps_only_the_values_that_are_secrets() -> None:
    assert env_secrets(ENV) == {
        "DATABASE_PASSWORD": "s3cret-Passw0rd",
        "STRIPE_KEY": "sk_live_Hx8Kq2Lm9Zr4Tb7Wc1Vd",
        "WEBHOOK_SALT": "Zk3f9QmX2pL8vR4tYb7WqE",
    }
