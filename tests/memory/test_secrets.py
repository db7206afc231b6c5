"""Redaction: each key shape, configured secrets, idempotence, and what is left alone.
(The measured corpus and the issue's shapes: tests/security/test_redaction.py.)"""

import re

import pytest
from pydantic import SecretStr

from memory import Redaction, is_secret_name, mask, redact
from memory.secrets import Redactor

SECRETS = {
    "openai_key": "sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8tUv",
    "anthropic_key": "sk-ant-api03-Zy9xWv8uTs7rQp6oNm5lKj4i",
    "aws_access_key": "AKIAIOSFODNN7EXAMPLE",
    "aws_secret_key": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    "github_token": "ghp_" + "a1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8",
    "slack_token": "xoxb-123456789012-abcdefGHIJKL",
    "telegram_token": "123456789:AAHfiqksKZ8WmR2zSjiQ7_v4TMAKdiHm9T0",
    "stripe_key": "sk_live_" + "4eC39HqLyjWDarjtT1zdp7dc" + "Xy81Lm2Np3Qr4St5Uv6Wx7Yz",
    "jwt": "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
}
MARKER = re.compile(r"\[REDACTED:\w+\]")


@pytest.mark.parametrize("kind", sorted(SECRETS))
def test_each_key_shape_is_redacted_whole(kind: str) -> None:
    redaction = redact(f"the value is {SECRETS[kind]} (keep it safe)")
    assert MARKER.sub("#", redaction.text) == "the value is # (keep it safe)"
    assert redaction.found == 1 and redaction.kinds


def test_private_key_blocks_go_whole_even_when_cut_short() -> None:
    pat = "github_pat_11ABCDEFG0" + "x" * 40
    key = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n-----END OPENSSH PRIVATE KEY-----"
    redaction = redact(f"{pat}\n{key}\nnext line")
    assert redaction.text == "[REDACTED:github_token]\n[REDACTED:private_key]\nnext line"
    assert redaction.kinds == ("github_token", "private_key")
    truncated = redact("cat id_rsa\n-----BEGIN RSA PRIVATE KEY-----\nMIIEow").text  # output cut short
    assert truncated == "cat id_rsa\n[REDACTED:private_key]"


def test_passwords_in_urls_and_assignments_keep_their_context() -> None:
    redaction = redact(
        "git clone https://bob:s3cr3t@example.com/r.git; curl 'http://h/login?user=a&password=pw123&x=1'"
    )
    assert MARKER.sub("#", redaction.text) == (
        "git clone https://bob:#@example.com/r.git; curl 'http://h/login?user=a&password=#&x=1'"
    )
    assert redaction.found == 2
    assert MARKER.sub(
        "#", redact('DB_PASSWORD=hunter22 {"password": "p a s s"} redis://:pw9@h:6379').text
    ) == ('DB_PASSWORD=# {"password": "#"} redis://:#@h:6379')


def test_configured_secrets_longest_first_and_short_ones_ignored() -> None:
    redaction = redact(
        "tokens: abcdef-ghijkl and abcdef-ghijkl-mnop, pin 1234",
        ["abcdef-ghijkl", "abcdef-ghijkl-mnop", "1234"],
    )
    assert redaction == Redaction(
        "tokens: [REDACTED:configured] and [REDACTED:configured], pin 1234", ("configured",), 2
    )


@pytest.mark.parametrize(
    "harmless",
    [
        "commit 3f786850e387550fdab836ed7e6dc881de23001b",  # lower-case hex is a hash, not a key
        "password=$DB_PASSWORD and password=<your password>",  # references, not values
        "[sudo] password for bob:",
        "passwd: password updated successfully",
        "def check_password(self, password: str, user: str) -> bool:",
        'api_key = os.environ["API_KEY"]; token = get_token(); secret = settings.SECRET_KEY',
        '  "pad_token": "<pad>", "eos_token": "</s>", max_tokens=512, token_type: bearer',
        "PWD=/home/ana/src GOOGLE_APPLICATION_CREDENTIALS=/etc/gcloud/sa.json PASSWORD_MIN_LENGTH=12",
        "ask-for-the-disk-usage-report-by-tomorrow",
        "ssh://git@github.com/org/repo.git https://registry.npmjs.org:443/@types/node",
        "sha256:" + "A" * 64,
        '"id": "chatcmpl-9xYzAbCdEfGhIjKlMnOpQrStUvWx1", "tool_call_id": "call_Ab12Cd34Ef56Gh78Ij90Kl12"',
        "request 0b6f1c1e-3d7a-4c5e-9f2a-7d1e5b8c9a0f took 12 ms",
    ],
)
def test_ordinary_text_is_left_alone(harmless: str) -> None:
    assert redact(harmless) == Redaction(harmless, (), 0)


def test_redacting_twice_changes_nothing_and_finds_nothing() -> None:
    text = (
        " ".join(SECRETS.values())
        + " https://u:pw@h/ password=x1y2z3 password: x API_KEY=Zx81kQpL0vNw3RtY7uMa"
        + ' {"api_key": "q8Xw2Lm4Np6Rt0Vz3Bc5"} Authorization: Bearer 9c1f0e2d3b4a5968778695a4b3c2d1e0'
    )
    once = redact(text, ["mysecretvalue"]).text
    assert redact(once, ["mysecretvalue"]) == Redaction(once, (), 0)


def test_json_like_values_are_redacted_inside_and_keys_give_context() -> None:
    messages = [
        {
            "role": "tool",
            "content": f"env: {SECRETS['openai_key']}",
            "tool_calls": [{"arguments": '{"k": "AKIAIOSFODNN7EXAMPLE"}'}],
            "password": "hunter2",  # only the key says so
        }
    ]
    redacted, found = Redactor.for_secrets(()).value(messages)
    assert MARKER.sub("#", str(redacted)) == str(
        [{"role": "tool", "content": "env: #", "tool_calls": [{"arguments": '{"k": "#"}'}], "password": "#"}]
    )
    assert found and "hunter2" not in str(redacted)
    assert messages[0]["content"].startswith("env: sk-")  # the caller's data is not changed


def test_secret_names_are_one_vocabulary() -> None:
    for name in (
        "OPENAI_API_KEY",
        "GITHUB_TOKEN",
        "db_password",
        "clientSecret",
        "X-API-Key",
        "SECRET_KEY_BASE",
    ):
        assert is_secret_name(name), name
    for name in ("HOME", "PWD", "OLDPWD", "max_tokens", "TOKENIZERS_PARALLELISM", "sort_key", "bypass"):
        assert not is_secret_name(name), name


def test_mask_shows_a_known_kind_and_at_most_the_last_four_characters() -> None:
    assert mask(SECRETS["openai_key"]) == "sk-…8tUv"
    assert mask(SECRETS["slack_token"]) == "xoxb-…IJKL"
    assert mask(SecretStr(SECRETS["telegram_token"])) == "…m9T0"
    assert mask("pass-word-0123456789") == "…6789"  # only public kind prefixes are shown
    assert mask("sk-short") == "…" and mask(None) == "(not set)"
