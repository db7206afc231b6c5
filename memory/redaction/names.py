"""Which names say that their value is a secret: `OPENAI_API_KEY`, `"password"`, `--auth-token`,
`clientSecret`, `X-API-Key`, `contraseña`.

A name is split into words (snake, kebab, dotted and camel case); its last word decides:

- a password word (`password`, `passwd`, `pwd`, `pass`, `passphrase`, `secret`, ...): any value
  it is given is a secret, even `x`;
- a token word (`token`, `apikey`, `credentials`, `auth`, `authorization`, `dsn`, ...), or `key`
  after a word that makes it a credential (`api_key`, `access_key`, `signing_key`): its value
  is a secret when it looks like a credential (values.py);
- a name that has one of these words elsewhere (`SECRET_KEY_BASE`, `STRIPE_KEY`, plain `key`):
  only a random-looking value is a secret.

A name that ends in a word for something else about a secret (`token_type`, `secret_name`,
`client_id`, `key_file`, `password_min_length`, `auth_url`), or that says it is public
(`public_key`, `pk`), names no secret; nor do `max_tokens`, `tokenizer`, `OLDPWD` or `bypass`.
This module is the vocabulary only, and cheap to import: the command policy uses it to tell
`echo $GITHUB_TOKEN` from `echo $HOME`.
"""

from __future__ import annotations

import re
from typing import Literal

NameClass = Literal["password", "token", "embedded"]

# detect-secrets' keyword list (its KeywordDetector's DENYLIST), split into words, and more.
PASSWORD_WORDS = frozenset(
    {"password", "passwd", "pwd", "pass", "pw", "passphrase", "passcode", "passwort", "secret", "mnemonic",
     "contraseña", "contrasena"}
)  # fmt: skip
TOKEN_WORDS = frozenset(
    {"token", "apikey", "credential", "credentials", "creds", "auth", "authorization", "pat",
     "dsn", "privatekey", "secretkey", "accesskey", "clientsecret", "authkey", "apitoken",
     "accesstoken", "authtoken", "bearer", "cookie", "sessionid"}
)  # fmt: skip
KEY_QUALIFIERS = frozenset(
    {"api", "access", "secret", "private", "priv", "signing", "sign", "encryption", "master",
     "client", "app", "auth", "account", "service", "license", "consumer", "admin", "deploy",
     "ingest", "subscription", "storage", "session", "shared", "hmac", "jwt", "write", "read",
     "root", "server", "db", "database", "personal", "bot", "integration", "partner", "merchant",
     "management", "security", "crypto", "cipher", "aes", "token", "webhook", "mgmt", "user"}
)  # fmt: skip
SECRET_WORDS = PASSWORD_WORDS | TOKEN_WORDS
GLUED = tuple(sorted((w for w in SECRET_WORDS if len(w) >= 5), key=len, reverse=True))
# A name ending in one of these is about a secret, not one: its id, file, length, kind, ...
ABOUT_WORDS = frozenset(
    {"id", "ids", "name", "names", "file", "files", "path", "dir", "url", "uri", "endpoint", "type",
     "kind", "length", "len", "count", "size", "ttl", "expiry", "expires", "expiration", "lifetime",
     "min", "max", "hash", "hashed", "digest", "policy", "prefix", "suffix", "env", "var", "header",
     "field", "format", "version", "algorithm", "alg", "location", "ref", "arn", "mode", "enabled",
     "required", "timeout", "limit", "provider", "method", "scheme", "store", "helper", "manager",
     "rotation", "reset", "strength", "hint", "label", "source", "sock", "socket", "agent", "command",
     "cmd", "fingerprint", "index", "idx", "list", "map", "id_token_hint"}
)  # fmt: skip
PUBLIC_WORDS = frozenset({"public", "pub", "publishable", "pk"})

_PARTS = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-zß-ÿ]+|\d+")


def words(name: str) -> list[str]:
    """`"OPENAI_API_KEY"` -> openai, api, key; `"clientSecret"` -> client, secret."""
    return [part.lower() for chunk in re.split(r"[\W_]+", name) for part in _PARTS.findall(chunk)]


def name_class(name: str) -> NameClass | None:
    """How much a name says about its value (the module docstring); None: nothing."""
    found = words(name)
    if not found or found[-1] in ABOUT_WORDS or PUBLIC_WORDS.intersection(found):
        return None
    last, before = _unglued(found[-1]), found[-2] if len(found) > 1 else ""
    if last in PASSWORD_WORDS:
        return "password"
    if last in TOKEN_WORDS or (last == "key" and before in KEY_QUALIFIERS):
        return "token"
    if any(word in SECRET_WORDS or word == "key" for word in found):
        return "embedded"
    return None


def _unglued(word: str) -> str:
    """The secret word a longer word ends with, written without a separator (`PGPASSWORD`,
    `MYTOKEN`); only words of five letters or more, so that `bypass` stays itself."""
    for secret in GLUED:
        if word.endswith(secret):
            return secret
    return word


def is_secret_name(name: str) -> bool:
    """Whether a variable or field called `name` holds a secret (`GITHUB_TOKEN`, `db_password`,
    `SECRET_KEY_BASE`; not `HOME`, `max_tokens` or `sort_key`)."""
    if name == "PWD":  # the shell's working directory
        return False
    found = name_class(name)
    return found in ("password", "token") or (
        found == "embedded" and any(word in SECRET_WORDS for word in words(name))
    )
