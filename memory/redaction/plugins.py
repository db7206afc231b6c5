"""detect-secrets' plugins as span finders.

detect-secrets answers "which secret values are in this line" (`scan_line`, ~3 ms a line through
its settings and filter machinery); a redactor needs "where", on every model call. So its plugins
are used directly, once compiled:

- the regex-based provider plugins (AWS, Azure storage, basic auth in URLs, Discord, GitHub,
  GitLab, JWT, Mailchimp, npm, OpenAI, private keys, PyPI, SendGrid, Slack, Square, Stripe,
  Telegram, Twilio): each regex of its `denylist`, read as the plugin reads it
  (every group that matched, else the whole match), the JWT plugin's `is_formally_valid` as a
  second look, widened to the whole token (Stripe's pattern knows a key's first 24 characters;
  keys have up to 99), behind `HINTS` so that text without them skips the regex;
- the KeywordDetector's quoted-value patterns (`password = "..."`, `"api_key": "..."`,
  `secret: '...'`, `private_key "...";`): the name around the keyword and the value go to the
  same judgement as temper's own assignments (context.py), since the detector alone flags
  `secret_name = "tls-cert"` and `"pwd": "/home/ana"`;
- the high-entropy plugins' entropy measures, through values.py.

Left out: IPPublicDetector (an address is not a secret); Cloudant, SoftLayer and the two IBM
plugins, whose `name = value` patterns the assignments in context.py cover, and Artifactory:
their patterns start with look-behinds or alternatives, so every position of a text is tried,
and together they cost more than all the other plugins (Artifactory's `AP...` passwords have no
prefix to look for first); and the plugins' network verification.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

from detect_secrets.plugins.aws import AWSKeyDetector
from detect_secrets.plugins.azure_storage_key import AzureStorageKeyDetector
from detect_secrets.plugins.base import RegexBasedDetector
from detect_secrets.plugins.basic_auth import BasicAuthDetector
from detect_secrets.plugins.discord import DiscordBotTokenDetector
from detect_secrets.plugins.github_token import GitHubTokenDetector
from detect_secrets.plugins.gitlab_token import GitLabTokenDetector
from detect_secrets.plugins.jwt import JwtTokenDetector
from detect_secrets.plugins.keyword import QUOTES_REQUIRED_DENYLIST_REGEX_TO_GROUP
from detect_secrets.plugins.mailchimp import MailchimpDetector
from detect_secrets.plugins.npm import NpmDetector
from detect_secrets.plugins.openai import OpenAIDetector
from detect_secrets.plugins.private_key import PrivateKeyDetector
from detect_secrets.plugins.pypi_token import PypiTokenDetector
from detect_secrets.plugins.sendgrid import SendGridDetector
from detect_secrets.plugins.slack import SlackDetector
from detect_secrets.plugins.square_oauth import SquareOAuthDetector
from detect_secrets.plugins.stripe import StripeDetector
from detect_secrets.plugins.telegram_token import TelegramBotTokenDetector
from detect_secrets.plugins.twilio import TwilioKeyDetector

from . import Span
from .context import judge
from .shapes import Shape, hinted_lines

# The plugins used, with hints for each of their regexes (lower-case strings one of which every
# match of that regex contains; empty: none to go by), in the order of the plugin's `denylist`.
HINTS: dict[type[RegexBasedDetector], tuple[tuple[str, ...], ...]] = {
    AWSKeyDetector: (("a3t", "abia", "acca", "akia", "asia"), ("aws",)),
    AzureStorageKeyDetector: (("accountkey=",),),
    BasicAuthDetector: (("://",),),
    DiscordBotTokenDetector: ((".",),),
    GitHubTokenDetector: (("ghp_", "gho_", "ghu_", "ghs_", "ghr_"),),
    GitLabTokenDetector: (
        ("gl",),
        ("gr1348941",),
        ("glcbt-",),
        ("glimt-",),
        ("glptt-",),
        ("glagent-",),
        ("gloas-",),
    ),
    JwtTokenDetector: (("eyj",),),
    MailchimpDetector: (("-us",),),
    NpmDetector: (("_authtoken=",),),
    OpenAIDetector: (("t3blbkfj",),),
    PrivateKeyDetector: (("private key",),) * 7 + (("putty-user-key-file-2",),),
    PypiTokenDetector: (("pypi-",), ("pypi-",)),
    SendGridDetector: (("sg.",),),
    SlackDetector: (("xox",), ("hooks.slack.com",)),
    SquareOAuthDetector: (("sq0csp-",),),
    StripeDetector: (("k_live_",),),
    TelegramBotTokenDetector: ((":",),),
    TwilioKeyDetector: (("ac",), ("sk",)),
}

# Cheap patterns a text must have before these plugins' own patterns (which try every
# position: a digit run, a capital) are searched.
GATES: dict[type[RegexBasedDetector], re.Pattern[str]] = {
    TelegramBotTokenDetector: re.compile(r":(?<=\d:)[0-9A-Za-z_-]{35}"),
    DiscordBotTokenDetector: re.compile(r"\.[a-zA-Z\d_-]{6}\.[a-zA-Z\d_-]{27}"),
}

# Where the group is a password inside a longer match (a URL), the group alone is the secret.
_VALUE_GROUPS = (BasicAuthDetector,)


def kind_of(plugin: type[RegexBasedDetector]) -> str:
    """`"AWS Access Key"` -> `aws_access_key`."""
    return re.sub(r"[^a-z0-9]+", "_", str(plugin.secret_type).lower()).strip("_")


def provider_shapes() -> list[Shape]:
    shapes = []
    for plugin, hints in HINTS.items():
        accept = JwtTokenDetector.is_formally_valid if plugin is JwtTokenDetector else None
        patterns = list(plugin().denylist)
        # A pattern a newer detect-secrets added has no hints: it runs on every text.
        for pattern, hint in zip(patterns, hints + ((),) * (len(patterns) - len(hints))):
            whole_token = not issubclass(plugin, _VALUE_GROUPS)
            shapes.append(
                Shape(kind_of(plugin), pattern, None, accept, hint, whole_token, gate=GATES.get(plugin))
            )
    return shapes


@dataclass(frozen=True)
class QuotedKeywords:
    """detect-secrets' KeywordDetector on quoted values, judged like temper's assignments."""

    kind: str = "secret_keyword"
    hints: tuple[str, ...] = ("key", "pass", "pwd", "secret", "contrase")

    def spans(self, text: str) -> Iterator[Span]:
        # Line by line (the detector's values may run across lines, and its patterns backtrack
        # over a whole text), and only lines with a keyword and a quote.
        for first, last in hinted_lines(text, self.hints):
            line = text[first:last]
            if any(quote in line for quote in "\"'`"):
                for start, end in self._line_spans(line):
                    yield first + start, first + end, self.kind

    def _line_spans(self, text: str) -> Iterator[tuple[int, int]]:
        for pattern, group in QUOTES_REQUIRED_DENYLIST_REGEX_TO_GROUP.items():
            for match in pattern.finditer(text):
                start, end = match.span(group)
                # The keyword is the first group, or the last where the value comes first ("x" == pwd).
                keyword = 1 if match.start(1) < start else pattern.groups
                name = _name_at(text, match.start(keyword), match.end(keyword))
                if judge(text, name, start, end, quoted=True):
                    yield start, end


def _name_at(text: str, start: int, end: int) -> str:
    """The whole name the keyword at text[start:end] is part of."""
    while start > 0 and (text[start - 1].isalnum() or text[start - 1] in "_.-"):
        start -= 1
    while end < len(text) and (text[end].isalnum() or text[end] == "_"):
        end += 1
    return text[start:end]
