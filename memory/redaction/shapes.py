"""Secrets known by their shape: temper's own patterns for what detect-secrets has no plugin for.

- key formats with a public prefix (PREFIXED): Hugging Face `hf_`, Google `AIza`, xAI `xai-`,
  Groq `gsk_`, Stripe `sk_live_`/`rk_live_`/`sk_test_`/`whsec_` at any length, OpenAI `sk-` of
  every generation, Anthropic `sk-ant-`, GitHub fine-grained `github_pat_`, GitLab `glpat-`,
  Slack `xapp-`, npm, DigitalOcean, Shopify, Vault, Databricks, age, Google OAuth, Docker Hub,
  Replicate, Perplexity, Linear, LangSmith, Postman, Doppler, ...;
- any other `prefix_` + a long random tail (`PREFIXED_RANDOM`): how most services shape keys now;
- whole private-key blocks, PEM, PuTTY and SSH2, through their end line (or the end of the text,
  when output was cut short);
- credentials in URLs: `scheme://user:password@`, with or without a user, and a random user
  alone (`https://<key>@sentry.io`);
- an AWS secret access key on its own: 40 base64 characters, random.

A `Shape` is a pattern, the group that holds the secret (None: every group that matched, else
the whole match, as detect-secrets reads its own patterns), an optional second look at a
candidate, and `hints`: lower-case strings one of which any match contains, so that most text
skips the pattern with a substring test. `whole_token` widens a match to the run of token
characters around it, so that a pattern that knows only a key's first 24 characters still
redacts the rest.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from . import Span
from .values import random_like

_TOKEN_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-")
_WORD_CHARS = _TOKEN_CHARS | frozenset(".+/")
_FENCE = _WORD_CHARS | {"="}
_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")
_EDGE = "\t \"'`=:,;()[]{}<>"


@dataclass(frozen=True)
class Shape:
    kind: str
    pattern: re.Pattern[str]
    group: int | None = 0
    accept: Callable[[str], bool] | None = None
    hints: tuple[str, ...] = ()
    whole_token: bool = False
    word_start: bool = False  # not inside a longer word (checked here: a pattern that starts
    # with a look-behind cannot be searched for by its literal prefix, and runs ~10x slower)
    gate: re.Pattern[str] | None = None  # a cheap pattern any text with a match has
    fenced: bool = False  # nor followed by a word character or `=`

    def spans(self, text: str) -> Iterator[Span]:
        if self.gate is not None and self.gate.search(text) is None:
            return
        for match in self.pattern.finditer(text):
            if self.word_start and match.start() > 0 and text[match.start() - 1] in _WORD_CHARS:
                continue
            if self.fenced and match.end() < len(text) and text[match.end()] in _FENCE:
                continue
            for start, end in _groups(match, self.group):
                if self.accept is not None and not self.accept(text[start:end]):
                    continue
                if self.whole_token:
                    start, end = widen(text, start, end)
                yield start, end, self.kind


def _groups(match: re.Match[str], group: int | None) -> Iterator[tuple[int, int]]:
    if group is not None:
        start, end = match.span(group)
        if end > start:
            yield start, end
        return
    spans = [
        match.span(i) for i in range(1, (match.re.groups or 0) + 1) if match.span(i)[1] > match.span(i)[0]
    ]
    if not spans:  # a pattern without groups (or none took part) means its whole match, trimmed
        start, end = match.span()
        text = match.string
        while start < end and text[start] in _EDGE:
            start += 1
        while end > start and text[end - 1] in _EDGE:
            end -= 1
        spans = [(start, end)] if end > start else []
    yield from spans


def lower_ascii(text: str) -> str:
    """`text` with A-Z lowered and every other character kept, so that positions in it are
    positions in `text` (`str.lower` turns a few characters into two, such as "İ")."""
    return text.lower() if text.isascii() else text.translate(_ASCII_LOWER)


def hinted_lines(text: str, hints: tuple[str, ...]) -> list[tuple[int, int]]:
    """(start, end) of each line that holds one of `hints` (lower-case), in order: what a
    detector that reads line by line reads, without a Python loop over every line."""
    lowered = lower_ascii(text)
    starts: set[int] = set()
    for hint in hints:
        at = lowered.find(hint)
        while at >= 0:
            start = lowered.rfind("\n", 0, at) + 1
            starts.add(start)
            end = lowered.find("\n", at)
            at = -1 if end < 0 else lowered.find(hint, end)
    lines = []
    for start in sorted(starts):
        end = text.find("\n", start)
        lines.append((start, len(text) if end < 0 else end))
    return lines


def widen(text: str, start: int, end: int) -> tuple[int, int]:
    """The span grown over the token characters on both sides."""
    while start > 0 and text[start - 1] in _TOKEN_CHARS:
        start -= 1
    while end < len(text) and text[end] in _TOKEN_CHARS:
        end += 1
    return start, end


def _token(kind: str, pattern: str, *hints: str) -> Shape:
    return Shape(kind, re.compile(pattern), hints=hints, whole_token=True, word_start=True)


PREFIXED: tuple[Shape, ...] = (
    _token("anthropic_key", r"sk-ant-[A-Za-z0-9_-]{20,}", "sk-ant-"),
    _token("openai_key", r"sk-(?:proj-|svcacct-|admin-|None-|or-v1-)?[A-Za-z0-9_-]{20,}", "sk-"),
    _token(
        "stripe_key",
        r"(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,}|whsec_[A-Za-z0-9+/=]{24,}",
        "_live_",
        "_test_",
        "whsec_",
    ),
    _token("huggingface_token", r"(?:hf_|api_org_)[A-Za-z0-9]{30,}", "hf_", "api_org_"),
    _token("google_api_key", r"AIza[0-9A-Za-z_-]{35}", "aiza"),
    _token(
        "google_oauth",
        r"GOCSPX-[A-Za-z0-9_-]{24,}|ya29\.[A-Za-z0-9_-]{30,}|1//0[A-Za-z0-9_-]{40,}",
        "gocspx-",
        "ya29.",
        "1//0",
    ),
    _token("xai_key", r"xai-[A-Za-z0-9]{32,}", "xai-"),
    _token("groq_key", r"gsk_[A-Za-z0-9]{32,}", "gsk_"),
    _token(
        "github_token", r"(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{22,})", "gh", "github_pat_"
    ),
    _token(
        "gitlab_token", r"gl(?:pat|dt|ft|soat|rt|cbt|imt|ptt|agent|oas|rtr|ffct)-[A-Za-z0-9_-]{20,}", "gl"
    ),
    _token("slack_token", r"(?:xox[abposre]-[A-Za-z0-9-]{10,}|xapp-\d-[A-Za-z0-9-]{10,})", "xox", "xapp-"),
    _token("npm_token", r"npm_[A-Za-z0-9]{36}", "npm_"),
    _token("digitalocean_token", r"do[opr]_v1_[a-f0-9]{64}", "_v1_"),
    _token("shopify_token", r"shp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}", "shp"),
    _token("vault_token", r"hv[sbr]\.[A-Za-z0-9_-]{24,}", "hvs.", "hvb.", "hvr."),
    _token("databricks_token", r"dapi[a-f0-9]{32}(?:-\d+)?", "dapi"),
    _token("age_secret_key", r"AGE-SECRET-KEY-1[0-9A-Z]{58}", "age-secret-key-"),
    _token("docker_token", r"dckr_(?:pat|oat)_[A-Za-z0-9_-]{20,}", "dckr_"),
    _token("replicate_token", r"r8_[A-Za-z0-9]{30,}", "r8_"),
    _token("perplexity_key", r"pplx-[A-Za-z0-9]{40,}", "pplx-"),
    _token("linear_key", r"lin_(?:api|oauth)_[A-Za-z0-9]{32,}", "lin_"),
    _token("langsmith_key", r"lsv2_(?:pt|sk)_[a-f0-9]{32}_[a-f0-9]{10}", "lsv2_"),
    _token("postman_key", r"PMAK-[a-f0-9]{24}-[a-f0-9]{34}", "pmak-"),
    _token("doppler_token", r"dp\.(?:pt|st|sa|ct|scim|audit)\.[A-Za-z0-9]{40,}", "dp."),
    _token("pinecone_key", r"pcsk_[A-Za-z0-9_]{40,}", "pcsk_"),
    _token("mailgun_key", r"key-[0-9a-f]{32}", "key-"),
    _token("twilio_key", r"SK[0-9a-fA-F]{32}", "sk"),
    _token("sentry_token", r"sntry[su]_[A-Za-z0-9+/=_-]{40,}", "sntry"),
    _token("grafana_token", r"gl(?:c|sa)_[A-Za-z0-9+/=_-]{32,}", "glc_", "glsa_"),
    _token("new_relic_key", r"NR(?:AK|AA|II)-[A-Z0-9]{27}", "nrak-", "nraa-", "nrii-"),
    _token("terraform_token", r"[A-Za-z0-9]{14}\.atlasv1\.[A-Za-z0-9_-]{60,}", ".atlasv1."),
    _token("planetscale_token", r"pscale_(?:tkn|pw|oauth)_[A-Za-z0-9_.-]{32,}", "pscale_"),
    _token("tailscale_key", r"tskey-[a-z]+-[A-Za-z0-9]{10,}-[A-Za-z0-9]{20,}", "tskey-"),
    _token("atlassian_token", r"ATATT3[A-Za-z0-9_=-]{100,}", "atatt3"),
    _token("square_token", r"sq0(?:atp|csp|idp)-[A-Za-z0-9_-]{22,}", "sq0"),
    _token("meta_token", r"EAA[A-Za-z0-9_-]{60,}", "eaa"),
    Shape(
        "twitter_token",
        re.compile(r"AAAAAAAAAAAAAAAAAAAAA[A-Za-z0-9%]{30,}"),
        accept=lambda token: random_like(token.lstrip("A")),
        hints=("aaaaaaaaaaaaaaaaaaaaa",),
        whole_token=True,
        word_start=True,
    ),
    _token("supabase_token", r"sbp_[a-f0-9]{40}", "sbp_"),
    _token("figma_token", r"figd_[A-Za-z0-9_-]{30,}", "figd_"),
    _token("fireworks_key", r"fw_[A-Za-z0-9]{20,}", "fw_"),
    _token("elevenlabs_key", r"sk_[a-f0-9]{48}", "sk_"),
    _token("cerebras_key", r"csk-[a-z0-9]{40,}", "csk-"),
    _token("pulumi_token", r"pul-[a-f0-9]{40}", "pul-"),
    _token("rubygems_key", r"rubygems_[a-f0-9]{48}", "rubygems_"),
    _token("nuget_key", r"oy2[a-z0-9]{43}", "oy2"),
    _token("bitbucket_token", r"ATBB[A-Za-z0-9_=.-]{32,}", "atbb"),
    _token("heroku_token", r"HRKU-[A-Za-z0-9_-]{30,}", "hrku-"),
    _token("onepassword_token", r"ops_[A-Za-z0-9+/=_-]{40,}", "ops_"),
    _token("airtable_token", r"pat[A-Za-z0-9]{14}\.[a-f0-9]{64}", "pat"),
    _token("mapbox_token", r"sk\.eyJ[A-Za-z0-9_-]{20,}\.[A-Za-z0-9_-]{20,}", "sk.eyj"),
    _token("dropbox_token", r"sl\.[A-Za-z0-9_-]{130,}", "sl."),
    _token("firebase_key", r"AAAA[A-Za-z0-9_-]{7}:APA91b[A-Za-z0-9_-]{100,}", ":apa91b"),
    _token("alibaba_key", r"LTAI[A-Za-z0-9]{12,20}", "ltai"),
    _token("tencent_key", r"AKID[A-Za-z0-9]{32}", "akid"),
    _token("azure_client_secret", r"[A-Za-z0-9_~.-]{3}\dQ~[A-Za-z0-9_~.-]{31,34}", "q~"),
    _token("braintree_token", r"access_token\$production\$[a-z0-9]{16}\$[a-f0-9]{32}", "$production$"),
    Shape(
        "discord_webhook", re.compile(r"/api/webhooks/\d+/([A-Za-z0-9_-]{60,})"), 1, hints=("/api/webhooks/",)
    ),
)

# Any `prefix_<random tail>`: a tail of MIN_PREFIXED_TAIL characters that looks random, with
# both cases. Shorter tails are left to PREFIXED: object ids of the same shape are everywhere in
# API output (Stripe's `pi_` and OpenAI's `call_` ids have 24, `chatcmpl-` 29).
MIN_PREFIXED_TAIL = 30
_TAIL = re.compile(rf"[_.-]([A-Za-z0-9]{{{MIN_PREFIXED_TAIL},}})")
_PREFIX = re.compile(r"(?<![\w.+/=-])[A-Za-z][A-Za-z0-9]{1,11}(?:[_.-][A-Za-z0-9]{1,11}){0,2}\Z")


@dataclass(frozen=True)
class PrefixedRandom:
    """`prefix_<random tail>`: found by its tail (a pattern that starts with a separator is
    searched for quickly), then its prefix is checked."""

    kind: str = "prefixed_key"
    hints: tuple[str, ...] = ()

    def spans(self, text: str) -> Iterator[Span]:
        for match in _TAIL.finditer(text):
            end = match.end(1)
            if end < len(text) and text[end] in _FENCE:
                continue
            prefix = _PREFIX.search(text, max(0, match.start() - 40), match.start())
            tail = match.group(1)
            if prefix is None or not (any(c.isupper() for c in tail) and any(c.islower() for c in tail)):
                continue
            if random_like(tail):
                yield prefix.start(), end, self.kind


_PEM = (
    r"-{4,5} ?BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)? ?-{4,5}(?s:.*?)"
    r"(?:-{4,5} ?END [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)? ?-{4,5}|\Z)"
)
_PUTTY = r"PuTTY-User-Key-File-\d:(?s:.*?)(?:Private-MAC: *[0-9a-fA-F]+|\Z)"
_PORT = re.compile(r"\d{1,5}(?:/|$)")
_NOT_A_VALUE = r"(?![$<{%\[])"  # `$VAR`, `<placeholder>`, `{template}`, `[REDACTED:...]`

CONTEXT_FREE: tuple[Shape | PrefixedRandom, ...] = (
    Shape("private_key", re.compile(f"{_PEM}|{_PUTTY}"), hints=("private key", "putty-user-key")),
    Shape(
        "url_password",
        re.compile(rf"://(?<=[A-Za-z0-9]://)[^\s:/@\"'<>]*:{_NOT_A_VALUE}([^\s@\"'<>]+)@"),
        1,
        accept=lambda password: not _PORT.match(password),  # host:8080/@scope is a path
        hints=("://",),
    ),
    Shape(
        "url_token",
        re.compile(r"://(?<=[A-Za-z0-9]://)([A-Za-z0-9_-]{20,})@"),
        1,
        accept=random_like,
        hints=("://",),
    ),
    Shape(
        "aws_secret_key",
        re.compile(r"[A-Za-z0-9/+]{40,}"),  # whole runs, of which exactly 40 characters count
        accept=lambda key: (
            len(key) == 40
            and any(c.isupper() for c in key)
            and any(c.islower() for c in key)
            and random_like(key)
        ),
        word_start=True,
        fenced=True,
    ),
    PrefixedRandom(),
)
