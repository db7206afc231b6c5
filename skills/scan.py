"""The security scan every skill goes through before it is written or imported.

What it looks for, and how hard it stops:

    hidden-unicode       block  tag characters (U+E0000-E007F) and bidi overrides (U+202A-202E,
                                U+2066-2069) anywhere: text a person reviewing the file cannot see
                         warn   zero-width characters (U+200B-200D, U+2060, U+FEFF past the start)
    model-instructions   block  the description talking to the model ("ignore previous
                                instructions", "do not tell the user", "reveal your system prompt")
                         warn   the same phrases in the body; a description that commands the
                                model ("you must always use this skill")
    secrets              block  a script or command that reads temper's or the machine's secrets
                                (/etc/temper, secrets.toml, private SSH keys, cloud credentials, API
                                keys in the environment, a whole environment dump); in the body's
                                prose, only temper's own (/etc/temper, secrets.toml)
    remote-code          block  downloading and running code in one go (`curl ... | sh`)
    network              warn   a script that reaches the network (curl, wget, nc, ssh, scp,
                                sockets, HTTP clients): scripts run only in the sandbox, where the
                                network is off unless a task turns it on

Scripts are the files under `scripts/` and any file with a script suffix or a shebang; the
SKILL.md body's fenced code blocks are scanned like scripts, since the planner runs them.
Each finding names the file and the 1-based line.

The scan is a tripwire, not the boundary: skill scripts only ever run inside the sandbox.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

Severity = Literal["block", "warn"]
SCRIPT_SUFFIXES = (".sh", ".bash", ".zsh", ".py", ".js", ".mjs", ".ts", ".rb", ".pl", ".ps1", ".php", ".lua")

_TAGS = re.compile("[\U000e0000-\U000e007f]")
_BIDI = re.compile("[\u202a-\u202e\u2066-\u2069]")
_ZERO_WIDTH = re.compile("[\u200b-\u200d\u2060\ufeff]")

_INJECTION = re.compile(
    r"\b(?:ignore|disregard|forget|override)\b.{0,40}\b(?:previous|prior|above|earlier|all|any|other|system)\b"
    r".{0,20}\b(?:instructions?|prompts?|rules|guidelines|messages?)\b"
    r"|\b(?:reveal|print|show|output|repeat|leak)\b.{0,30}\b(?:system prompt|hidden instructions|your instructions)\b"
    r"|\b(?:do not|don't|never)\b.{0,20}\b(?:tell|inform|mention (?:this )?to|let)\b.{0,15}\b(?:the )?(?:user|operator|human)\b"
    r"|\byou are now\b|\bnew instructions\s*:|\bjailbreak\b|<\|im_(?:start|end)\|>|\[/?INST\]",
    re.IGNORECASE,
)
_COMMANDING = re.compile(
    r"\b(?:you must|you should always|always (?:use|load|call|invoke|run) this|before (?:answering|any other))\b",
    re.IGNORECASE,
)
_TEMPER_SECRETS = re.compile(r"/etc/temper\b|secrets\.toml")
_SECRETS = re.compile(
    r"/etc/temper\b|secrets\.toml|\.ssh/(?:id_[a-z0-9]+\b(?!\.pub)|authorized_keys)|\bid_(?:rsa|ed25519|ecdsa)\b(?!\.pub)"
    r"|\.aws/credentials|\.netrc\b|\.docker/config\.json|\.kube/config|/etc/shadow\b"
    r"|\$\{?[A-Z0-9_]*(?:API_KEY|TOKEN|SECRET|PASSWORD)\b"
    r"|\b(?:printenv|env)\s*(?:$|[|>;&)])|\bexport\s+-p\b|\bset\s*\|"
    r"|\bos\.environ\b(?!\s*(?:\.get|\[))|\bdict\(\s*os\.environ\s*\)|\bprocess\.env\b(?!\.[A-Za-z_])"
    r"|/proc/(?:self|\d+)/environ",
    re.MULTILINE,
)
_REMOTE_CODE = re.compile(
    r"\b(?:curl|wget)\b[^\n|]*\|\s*(?:sudo\s+)?(?:ba|z|k)?sh\b|\b(?:curl|wget)\b[^\n|]*\|\s*python[0-9.]*\b"
    r"|\bbase64\s+(?:-d|--decode)\b[^\n|]*\|\s*(?:ba)?sh\b|\beval\s+\"?\$\((?:curl|wget)\b",
)
_NETWORK = re.compile(
    r"\b(?:curl|wget|nc|ncat|netcat|telnet|ssh|scp|sftp|ftp)\b(?=\s)|/dev/(?:tcp|udp)/"
    r"|\brsync\b[^\n]*\s\S+:\S*|\bimport\s+(?:requests|httpx|urllib3?|socket|aiohttp|http\.client)\b"
    r"|\bfrom\s+(?:requests|httpx|urllib|socket|aiohttp|http)\b|\burllib\.request\b|\bsocket\.socket\("
    r"|\bfetch\(|\bInvoke-WebRequest\b|\bnew\s+WebSocket\(|https?://",
)
_FENCE = re.compile(r"^\s*(```|~~~)")


@dataclass(frozen=True)
class Finding:
    severity: Severity
    path: str  # the file inside the skill folder, e.g. SKILL.md or scripts/run.sh
    line: int  # 1-based
    rule: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.rule}: {self.message}"


def blocking(findings: Iterable[Finding]) -> list[Finding]:
    return [finding for finding in findings if finding.severity == "block"]


def scan_skill(files: dict[str, str]) -> list[Finding]:
    """Findings for a skill's files (relative path -> text), SKILL.md first, then by path."""
    findings: list[Finding] = []
    for path in sorted(files, key=lambda p: (p != "SKILL.md", p)):
        text = files[path]
        findings += _hidden_unicode(path, text)
        if path == "SKILL.md":
            findings += _skill_md(text)
        elif is_script(path, text):
            findings += _script_lines(path, enumerate(text.splitlines(), 1), "script")
        else:
            findings += _prose(path, text)
    return findings


def is_script(path: str, text: str) -> bool:
    return path.startswith("scripts/") or path.endswith(SCRIPT_SUFFIXES) or text.startswith("#!")


def _hidden_unicode(path: str, text: str) -> list[Finding]:
    found = []
    for number, line in enumerate(text.splitlines(), 1):
        if _TAGS.search(line):
            found.append(
                Finding("block", path, number, "hidden-unicode", "invisible tag characters (U+E00xx)")
            )
        if match := _BIDI.search(line):
            code = f"U+{ord(match.group(0)):04X}"
            found.append(Finding("block", path, number, "hidden-unicode", f"a bidi override ({code})"))
        zero = _ZERO_WIDTH.findall(line[1:] if number == 1 and line.startswith("\ufeff") else line)
        if zero:
            found.append(
                Finding("warn", path, number, "hidden-unicode", f"{len(zero)} zero-width character(s)")
            )
    return found


def _skill_md(text: str) -> list[Finding]:
    """The description's lines are held to the model-instruction rules; the body's prose warns;
    the body's fenced code is scanned as a script."""
    lines = text.splitlines()
    found: list[Finding] = []
    front_end = _front_matter_end(lines)
    key = ""
    for number, line in enumerate(lines[:front_end], 1):
        if top := re.match(r"([A-Za-z_-]+)\s*:", line):
            key = top.group(1)
        if key == "description":
            if match := _INJECTION.search(line):
                found.append(
                    Finding(
                        "block",
                        "SKILL.md",
                        number,
                        "model-instructions",
                        f"description says {match.group(0)!r}",
                    )
                )
            elif match := _COMMANDING.search(line):
                found.append(
                    Finding(
                        "warn",
                        "SKILL.md",
                        number,
                        "model-instructions",
                        f"description commands the model ({match.group(0)!r}); say what it does and when",
                    )
                )
    code: list[tuple[int, str]] = []
    fence = False
    for number, line in enumerate(lines[front_end:], front_end + 1):
        if _FENCE.match(line):
            fence = not fence
            continue
        if fence:
            code.append((number, line))
        elif match := _INJECTION.search(line):
            found.append(
                Finding("warn", "SKILL.md", number, "model-instructions", f"body says {match.group(0)!r}")
            )
        elif match := _TEMPER_SECRETS.search(line):
            found.append(
                Finding("block", "SKILL.md", number, "secrets", f"refers to {match.group(0).strip()!r}")
            )
    return found + _script_lines("SKILL.md", code, "command")


def _front_matter_end(lines: list[str]) -> int:
    if not lines or lines[0].lstrip("\ufeff").strip() != "---":
        return 0
    for index, line in enumerate(lines[1:], 1):
        if line.strip() == "---":
            return index + 1
    return 0


def _script_lines(path: str, lines: Iterable[tuple[int, str]], what: str) -> list[Finding]:
    found = []
    for number, line in lines:
        if line.lstrip().startswith(("#", "//")) and not line.startswith("#!"):
            continue  # a comment: not run
        if match := _REMOTE_CODE.search(line):
            found.append(
                Finding(
                    "block",
                    path,
                    number,
                    "remote-code",
                    f"{what} downloads and runs code: {match.group(0)!r}",
                )
            )
        elif match := _SECRETS.search(line):
            found.append(
                Finding("block", path, number, "secrets", f"{what} reads {match.group(0).strip()!r}")
            )
        elif match := _NETWORK.search(line):
            found.append(
                Finding(
                    "warn",
                    path,
                    number,
                    "network",
                    f"{what} reaches the network ({match.group(0).strip()!r})",
                )
            )
    return found


def _prose(path: str, text: str) -> list[Finding]:
    found = []
    for number, line in enumerate(text.splitlines(), 1):
        if match := _INJECTION.search(line):
            found.append(Finding("warn", path, number, "model-instructions", f"says {match.group(0)!r}"))
    return found
