"""Redaction: each key shape, configured secrets, idempotence, and what is left alone."""

import pytest
from pydantic import SecretStr

from memory import mask, redact
from memory.secrets import Redactor

SECRETS = {
    "openai_key": "sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8tUv",
    "anthropic_key": "sk-ant-api03-Zy9xWv8uTs7rQp6oNm5lKj4i",
    "aws_access_key": "AKIAIOSFODNN7EXAMPLE",
    "aws_secret_key": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    "github_token": "ghp_" + "a1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8",
    "slack_token": "xoxb-123456789012-abcdefGHIJKL",
    "telegram_token": "123456789:AAHfiqksKZ8WmR2zSjiQ7_v4TMAKdiHm9T0",
}


@pytest.mark.parametrize("kind", sorted(SECRETS))
def test_each_key_shape_is_redacted(kind: str) -> None:
    text, found = redact(f"the value is {SECRETS[kind]} (keep it safe)")
    assert text == f"the value is [REDACTED:{kind}] (keep it safe)"
    assert found == [kind]


def test_fine_grained_github_token_and_private_key_block() -> None:
    pat = "github_pat_11ABCDEFG0" + "x" * 40
    key = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n-----END OPENSSH PRIVATE KEY-----"
    text, found = redact(f"{pat}\n{key}\nnext line")
    assert text == "[REDACTED:github_token]\n[REDACTED:private_key]\nnext line"
    assert found == ["github_token", "private_key"]
    truncated, _ = redact("cat id_rsa\n-----BEGIN RSA PRIVATE KEY-----\nMIIEow")  # output cut short
    assert truncated == "cat id_rsa\n[REDACTED:private_key]"


def test_passwords_in_urls_and_assignments_keep_their_context() -> None:
    text, found = redact(
        "git clone https://bob:s3cr3t@example.com/r.git; curl 'http://h/login?user=a&password=pw123&x=1'"
    )
    assert text == (
        "git clone https://bob:[REDACTED:url_password]@example.com/r.git;"
        " curl 'http://h/login?user=a&password=[REDACTED:password]&x=1'"
    )
    assert found == ["password", "url_password"]
    assert redact('DB_PASSWORD=hunter22 {"password": "p a s s"}')[0] == (
        'DB_PASSWORD=[REDACTED:password] {"password": "[REDACTED:password]"}'
    )


def test_configured_secrets_longest_first_and_short_ones_ignored() -> None:
    text, found = redact(
        "tokens: abcdef-ghijkl and abcdef-ghijkl-mnop, pin 1234",
        ["abcdef-ghijkl", "abcdef-ghijkl-mnop", "1234"],
    )
    assert text == "tokens: [REDACTED:configured] and [REDACTED:configured], pin 1234"
    assert found == ["configured"]


@pytest.mark.parametrize(
    "harmless",
    [
        "commit 3f786850e387550fdab836ed7e6dc881de23001b",  # lower-case hex is a hash, not a key
        "password=$DB_PASSWORD and password=<your password>",  # references, not values
        "[sudo] password for bob:",
        "ask-for-the-disk-usage-report-by-tomorrow",
        "ssh://git@github.com/org/repo.git",
        "sha256:" + "A" * 64,
    ],
)
def test_ordinary_text_is_left_alone(harmless: str) -> None:
    assert redact(harmless) == (harmless, [])


def test_redacting_twice_changes_nothing_and_finds_nothing() -> None:
    once, _ = redact(" ".join(SECRETS.values()) + " https://u:pw@h/ password=x1y2z3", ["mysecretvalue"])
    assert redact(once, ["mysecretvalue"]) == (once, [])


def test_json_like_values_are_redacted_inside() -> None:
    messages = [
        {
            "role": "tool",
            "content": f"env: {SECRETS['openai_key']}",
            "tool_calls": [{"arguments": '{"k": "AKIAIOSFODNN7EXAMPLE"}'}],
        }
    ]
    redacted, found = Redactor.for_secrets(()).value(messages)
    assert redacted == [
        {
            "role": "tool",
            "content": "env: [REDACTED:openai_key]",
            "tool_calls": [{"arguments": '{"k": "[REDACTED:aws_access_key]"}'}],
        }
    ]
    assert found == {"openai_key", "aws_access_key"}
    assert messages[0]["content"].startswith("env: sk-")  # the caller's data is not changed


def test_mask_shows_a_known_kind_and_at_most_the_last_four_characters() -> None:
    assert mask(SECRETS["openai_key"]) == "sk-…8tUv"
    assert mask(SECRETS["slack_token"]) == "xoxb-…IJKL"
    assert mask(SecretStr(SECRETS["telegram_token"])) == "…m9T0"
    assert mask("pass-word-0123456789") == "…6789"  # only public kind prefixes are shown
    assert mask("sk-short") == "…" and mask(None) == "(not set)"
