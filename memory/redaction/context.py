"""Secrets known by where they stand: a value given to a name that says it is secret.

    API_KEY=...   export SECRET_TOKEN="..."   "api_key": "..."   password: x   --api-key ...
    ?access_token=...&   Authorization: Bearer ...   -H 'X-API-Key: ...'   <password>...</password>
    mysql -p...   sshpass -p ...   curl -u user:...   docker login -p ...   machine h login u password ...

`Assignments` finds `name <sep> value` (sep `=`, `:`, `:=`, `=>`; names and values quoted or
not, JSON-escaped quotes too), flags (`--name value`) and XML elements whose name has a secret
word in it (names.py), and lets values.py judge the value (`judge`). One rule of its own: an
unquoted value after a colon, given to a password word, must end its line (`password: x`, but not
`passwd: password updated successfully` or `def check(password: str, user: str)`).
`SecretColumns` reads CSV and TSV columns named like secrets, `KubernetesSecrets` the data of a
`kind: Secret`, and COMMAND_LINES the commands that take a password without naming it, and
"the password is ..." in prose.

detect-secrets' KeywordDetector (plugins.py) finds the quoted forms too; both feed `judge`.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

from . import Span
from .names import SECRET_WORDS, name_class, words
from .shapes import Shape, hinted_lines, lower_ascii
from .values import credential_like, is_reference, is_secret_value

# Parts of names.py's words: a name with none of them in it is not read further (names.py
# decides which names with one count).
_STEMS = ("pass", "pwd", "pw", "secret", "token", "key", "auth", "credential", "creds", "dsn", "pat",
          "contrase", "cookie", "session", "mnemonic", "bearer")  # fmt: skip
_NAME = rf"-{{0,2}}(?=[\w.-]{{0,80}}?(?i:{'|'.join(_STEMS)}))[A-Za-z_][\w.-]{{0,80}}"
_SCHEME = r"(?:(?i:bearer|basic|token|bot|digest|apikey)[ \t]+)?"
_BARE = r"[^\s\"'`&;,()\[\]{}<>|\\]+"
ASSIGNMENT = re.compile(
    rf"(?<![\w.-])(?P<name>{_NAME})\\?[\"']?\]?[ \t]*(?P<sep>:=|=>|=(?!=)|:(?!:))[ \t]*"
    rf"(?:\\?\"(?P<dq>{_SCHEME}[^\"\n\\]*?)\\?\"|\\?'(?P<sq>{_SCHEME}[^'\n\\]*?)\\?'|(?P<bare>{_SCHEME}{_BARE}))"
)
FLAG = re.compile(
    rf"(?<![\w.-])(?=-)(?P<name>{_NAME})[ \t]+(?:\"(?P<dq>[^\"\n]+)\"|'(?P<sq>[^'\n]+)'|(?P<bare>[^\s\"'`&;|<>-][^\s\"'`&;|<>]*))"
)
XML = re.compile(rf"<(?P<name>[\w.-]*(?i:{'|'.join(_STEMS)})[\w.-]*)>(?P<bare>[^<\n]+)</(?P=name)>")
_LINE_END = re.compile(r"[ \t]*(?:[,}\]][ \t]*)*(?:#.*)?(?:\n|\r|$)")
_SCHEME_WORD = re.compile(r"(?i:bearer|basic|token|bot|digest|apikey)[ \t]+")


@dataclass(frozen=True)
class Assignments:
    """Values given to secret-sounding names, in any of the syntaxes above."""

    kind: str = "secret_assignment"
    hints: tuple[str, ...] = _STEMS

    def spans(self, text: str) -> Iterator[Span]:
        for match in self._matches(text):
            values = match.groupdict()
            group = next(g for g in ("dq", "sq", "bare") if values.get(g) is not None)
            start, end = match.span(group)
            scheme = _SCHEME_WORD.match(text, start, end)
            if scheme is not None:
                start = scheme.end()
            # A query parameter's value is a credential when its name has a secret word (`&key=`).
            query = match.start("name") > 0 and text[match.start("name") - 1] in "?&"
            if judge(
                text,
                match.group("name"),
                start,
                end,
                quoted=group != "bare",
                colon=_colon(match),
                query=query,
            ):
                yield start, end, self.kind

    def _matches(self, text: str) -> Iterator[re.Match[str]]:
        """Matches that start where a name holding a hint starts: searching the patterns over
        the whole text would try every position of it."""
        lowered = lower_ascii(text)
        starts: set[int] = set()
        for hint in self.hints:
            at = lowered.find(hint)
            while at >= 0:
                start = at
                while start > 0 and (text[start - 1].isalnum() or text[start - 1] in "_.-"):
                    start -= 1
                starts.add(start)
                at = lowered.find(hint, at + len(hint))
        for start in sorted(starts):
            for pattern in (ASSIGNMENT, FLAG):
                match = pattern.match(text, start)
                if match is not None:
                    yield match
        if "</" in text:
            yield from XML.finditer(text)


@dataclass(frozen=True)
class SecretColumns:
    """Comma- or tab-separated rows under a header that names a secret column (`Access key ID,
    Secret access key`, a CSV of users and passwords): that column's values."""

    kind: str = "secret_column"
    hints: tuple[str, ...] = _STEMS
    max_rows: int = 200  # rows read under one header

    def spans(self, text: str) -> Iterator[Span]:
        if "," not in text and "\t" not in text:
            return
        for first, last in hinted_lines(text, self.hints):
            header = text[first:last]
            separator = "\t" if "\t" in header else ","
            names = header.split(separator)
            columns = [i for i, name in enumerate(names) if len(names) > 1 and _secret_column(name)]
            row_start = last + 1
            for _ in range(self.max_rows if columns else 0):
                if row_start > len(text):
                    break
                row_end = text.find("\n", row_start)
                row_end = len(text) if row_end < 0 else row_end
                fields = text[row_start:row_end].split(separator)
                if len(fields) != len(names):
                    break
                for column in columns:
                    value = fields[column].strip().strip("\"'")
                    if value and judge(value, names[column], 0, len(value), quoted=True):
                        start = (
                            row_start + sum(len(f) + 1 for f in fields[:column]) + fields[column].find(value)
                        )
                        yield start, start + len(value), self.kind
                row_start = row_end + 1


@dataclass(frozen=True)
class KubernetesSecrets:
    """The values under `data:` and `stringData:` of a Kubernetes `kind: Secret`: every one is a
    secret, whatever its key is called (base64 hides its shape)."""

    kind: str = "kubernetes_secret"
    hints: tuple[str, ...] = ("kind: secret",)

    def spans(self, text: str) -> Iterator[Span]:
        offset = 0
        for document in text.split("\n---"):
            if _K8S_SECRET.search(document):
                for block in _K8S_DATA.finditer(document):
                    for entry in _K8S_ENTRY.finditer(block.group(1)):
                        start = offset + block.start(1) + entry.start(1)
                        yield start, start + len(entry.group(1)), self.kind
            offset += len(document) + len("\n---")


_K8S_SECRET = re.compile(r"(?m)^kind:[ \t]*Secret[ \t]*$")
_K8S_DATA = re.compile(r"(?m)^(?:data|stringData):[ \t]*\n((?:[ \t]+[^\n]*(?:\n|$))+)")
_K8S_ENTRY = re.compile(r"(?m)^[ \t]+[\w.-]+:[ \t]*[\"']?([^\s\"'][^\n\"']*?)[\"']?[ \t]*$")


def _secret_column(name: str) -> bool:
    return 0 < len(name.strip()) <= 40 and name_class(name) in ("password", "token")


def _colon(match: re.Match[str]) -> bool:
    return "sep" in match.re.groupindex and match.group("sep") == ":"


def judge(
    text: str, name: str, start: int, end: int, *, quoted: bool, colon: bool = False, query: bool = False
) -> bool:
    """Whether text[start:end], given to `name`, is a secret."""
    cls = name_class(name)
    if cls is None or end <= start:
        return False
    if query and cls == "embedded":
        cls = "token"
    value = text[start:end]
    next_char = text[end : end + 1]
    if cls == "password" and colon and not quoted and not _LINE_END.match(text, end):
        return False
    keyed = cls == "embedded" and not SECRET_WORDS.intersection(words(name))
    # `password = pw` in code passes a variable on; `--password=pw` and `DB_PASSWORD=pw` are shell.
    code = not colon and not name.startswith("-") and not name.isupper()
    return is_secret_value(cls, value, quoted=quoted, next_char=next_char, code=code, keyed=keyed)


def _credential(value: str) -> bool:
    return not value.startswith("$") and credential_like(value)


def _stated(value: str) -> bool:
    """A password as prose states it ("the password is hunter2"): a digit, or a capital inside,
    so that "the password is incorrect" and "is Required" are not."""
    return (
        len(value) >= 6
        and not is_reference(value, quoted=False)
        and (any(c.isdigit() for c in value) or any(c.isupper() for c in value[1:]))
    )


COMMAND_LINES: tuple[Shape, ...] = (
    Shape(
        "stated_secret",
        re.compile(
            r"(?i:\b(?:password|passphrase|passwd|pass ?code|api[ _-]?key|secret(?:[ _-]?key)?|access[ _-]?token|token)"
            r"\s+(?:is|was)\s*:?\s+)[\"'`]?([^\s\"'`]+?)[\"'`]?[.,;!?)]*(?=\s|$)"
        ),
        1,
        _stated,
        ("password", "passphrase", "passwd", "pass code", "passcode", "key", "secret", "token"),
    ),
    Shape(
        "bearer_token",
        re.compile(r"[Bb]earer[ \t]+([A-Za-z0-9._~+/=-]{8,})"),
        1,
        _credential,
        ("bearer",),
        word_start=True,
    ),
    Shape(
        "password",
        re.compile(
            r"\bmysql(?:dump|admin|sh)?\b[^\n|;&]*?[ \t]-p(?:\"([^\"\n]+)\"|'([^'\n]+)'|([^\s\"'$-][^\s\"']*))"
        ),
        None,
        hints=("mysql",),
    ),
    Shape(
        "password",
        re.compile(r"\bsshpass[ \t]+-p[ \t]*(?:\"([^\"\n]+)\"|'([^'\n]+)'|([^\s\"'$]\S*))"),
        None,
        hints=("sshpass",),
    ),
    Shape(
        "password",
        re.compile(r"\blogin\b[^\n|;&]*?[ \t]-p[ \t]+(?:\"([^\"\n]+)\"|'([^'\n]+)'|([^\s\"'$-]\S*))"),
        None,
        hints=("login",),
    ),
    Shape(
        "password",
        re.compile(r"-(?:u|-user)[ \t]+[\"']?[^\s:\"'$]+:([^\s\"'@$][^\s\"'@]*)"),
        1,
        hints=("-u", "--user"),
        word_start=True,
    ),
    Shape(
        "secret_assignment",
        re.compile(r"\bsecret set\b[^\n|;&]*?[ \t](?:--body|-b)[ \t=]+[\"']?([^\s\"'$-][^\s\"']*)"),
        1,
        hints=("secret set",),
    ),
    Shape("password", re.compile(r"-pass(?:in|out)?[ \t]+pass:(\S+)"), 1, hints=("-pass",)),
    Shape(
        "password",
        re.compile(r"\bredis-cli\b[^\n|;&]*?[ \t](?:-a|--pass)[ \t]+[\"']?([^\s\"'$-][^\s\"']*)"),
        1,
        hints=("redis-cli",),
    ),
    # ~/.pgpass: host:port:database:user:password
    Shape(
        "password",
        re.compile(r"(?m)^[^\s:#]+:(?:\d{1,5}|\*):[^\s:]+:[^\s:]+:(\S+)$"),
        1,
        hints=(":5432:", ":*:"),
    ),
    Shape("password", re.compile(r"\bmachine[ \t]+\S+.*?\bpassword[ \t]+(\S+)"), 1, hints=("machine",)),
)
