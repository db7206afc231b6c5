"""Whether a value is a secret, given the class of the name it was assigned to (names.py), and
whether a string looks random.

Randomness is detect-secrets' Shannon entropy (its Base64HighEntropyString and
HexHighEntropyString plugins), but with a limit that grows with the length instead of a fixed
4.5 / 3.0: a string of n characters cannot score above log2(n), so a fixed limit misses every
random key shorter than 2^4.5 = 23 characters while passing long base64 text. A string looks
random when it has letters and digits, is not a keyboard sequence (detect-secrets'
`is_sequential_string`), and scores at least RANDOMNESS of the most its length and alphabet
allow. RANDOMNESS and MIN_RANDOM_CHARS were chosen on the development seed of
tests/security/secret_corpus.py.

A value is never a secret when it is a reference to one: `$VAR`, `${VAR}`, `{{ var }}`,
`<your key>`, `%(key)s`, `os.environ["KEY"]`, `settings.SECRET_KEY`, `get_token()`, a path, or
an empty-ish word (`none`, `true`, ...).
"""

from __future__ import annotations

import math
import re

from detect_secrets.filters.heuristic import (
    is_prefixed_with_dollar_sign,
    is_sequential_string,
    is_templated_secret,
)
from detect_secrets.plugins.high_entropy_strings import Base64HighEntropyString, HexHighEntropyString

from .names import NameClass, name_class

MIN_RANDOM_CHARS = 16
RANDOMNESS = 0.8  # of log2(min(length, alphabet)): random keys score 0.9-1, words and ids less
MIN_CREDENTIAL_CHARS = 8

_BASE64 = Base64HighEntropyString()
_HEX = HexHighEntropyString()
_HEX_CHARS = frozenset("0123456789abcdefABCDEF")
_TOKEN = re.compile(r"[A-Za-z0-9+/=_.~-]+")
_NULLISH = frozenset({"none", "null", "nil", "true", "false", "undefined", "yes", "no", "on", "off", "empty"})
_DOTTED = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+")
_VARIABLE = re.compile(r"[A-Za-z_]+")
_CODE_WORDS = frozenset(
    {"await", "new", "lambda", "function", "async", "yield", "not", "self", "this", "typeof"}
)
_TEMPLATE = re.compile(r"\$[{(A-Za-z_]|\{\{|\{%|<%|%\(|%s\b|\[REDACTED:")


def random_like(value: str) -> bool:
    if len(value) < MIN_RANDOM_CHARS or not _TOKEN.fullmatch(value):
        return False
    if not (any(c.isdigit() for c in value) and any(c.isalpha() for c in value)):
        return False
    if is_sequential_string(value):
        return False
    plugin, alphabet = (_HEX, 16) if set(value) <= _HEX_CHARS else (_BASE64, 64)
    return plugin.calculate_shannon_entropy(value) >= RANDOMNESS * math.log2(min(len(value), alphabet))


def credential_like(value: str) -> bool:
    """A token's shape: no spaces, at least MIN_CREDENTIAL_CHARS, letters with digits or with
    mixed case (not `my-app-token`, `basic`, `12345678`)."""
    if len(value) < MIN_CREDENTIAL_CHARS or any(c.isspace() for c in value):
        return False
    letters = [c for c in value if c.isalpha()]
    if not letters:
        return False
    mixed = any(c.isupper() for c in letters) and any(c.islower() for c in letters)
    return mixed or any(c.isdigit() for c in value) or random_like(value)


def is_reference(value: str, *, quoted: bool, next_char: str = "", code: bool = True) -> bool:
    """Whether `value` names or computes a secret rather than holding one. `code`: it was
    given with `=`, as in code, where `password = password` passes a variable on."""
    if not any(c.isalnum() for c in value) or value.lower() in _NULLISH:
        return True
    if is_templated_secret(value) or is_prefixed_with_dollar_sign(value) or _TEMPLATE.match(value):
        return True
    if value.startswith(("/", "~/", "./", "../")) and not random_like(value.replace("/", "")):
        return True  # a path: the file holds it (a base64 key may start with a slash too)
    if quoted:
        return value.startswith("[") and value.endswith("]")  # [PAD], [MASK]: placeholders
    if next_char in "([" and next_char:  # get_secret(), environ["KEY"]
        return True
    if value[0] in "<{([!&@*`\\":
        return True
    if _DOTTED.fullmatch(value) or value in _CODE_WORDS:  # settings.SECRET_KEY, await f(), new X()
        return True
    # password=password, token=secret_token: a variable (a digit makes it a value: pw123)
    return code and bool(_VARIABLE.fullmatch(value)) and name_class(value) is not None


def is_secret_value(
    cls: NameClass, value: str, *, quoted: bool, next_char: str = "", code: bool = True, keyed: bool = False
) -> bool:
    """Whether `value`, assigned to a name of class `cls`, is a secret. `keyed`: the name's only
    secret word is `key` (`key`, `cache key`, `idempotency_key`, `STRIPE_KEY`), whose values are
    often hashes, UUIDs and slugs: only a random value with both cases counts."""
    if is_reference(value, quoted=quoted, next_char=next_char, code=code):
        return False
    if cls == "password":
        return True
    if cls == "token":
        return credential_like(value)
    if keyed and not (any(c.isupper() for c in value) and any(c.islower() for c in value)):
        return False
    return random_like(value)
