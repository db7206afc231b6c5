"""Shell commands embedded in one-line programs of other languages, so that
`python3 -c "import os; os.system('rm -rf /')"` is judged like `rm -rf /`.

Found: string (or list-of-strings) arguments of system, popen, subprocess's run/call/
check_output/Popen, exec*/spawn* (Node's child_process too), Perl and Ruby backticks, and
`shutil.rmtree(PATH)` read as `rm -rf PATH`. Anything computed is invisible here; the sandbox
is what contains it.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterator

_CALL = re.compile(
    r"\b(?:system|popen|call|run|check_call|check_output|Popen|getoutput|getstatusoutput"
    r"|spawn\w*|exec\w*)\s*\(\s*(?:\[(?P<items>[^\]]*)\]|[rbuf]?(?P<quote>['\"])(?P<text>.*?)(?P=quote))",
    re.DOTALL,
)
_RMTREE = re.compile(
    r"\brmtree\s*\(\s*(?:(?:os\.path\.)?expanduser\s*\(\s*)?[rbuf]?(?P<quote>['\"])(?P<path>.*?)(?P=quote)"
)
_BACKTICKS = re.compile(r"`([^`]+)`")
_STRING = re.compile(r"(['\"])(.*?)\1")


def embedded_commands(code: str) -> Iterator[str]:
    """The shell command lines `code` passes to a shell or runs as a program."""
    for match in _CALL.finditer(code):
        if match.group("items") is not None:
            yield " ".join(shlex.quote(item) for _, item in _STRING.findall(match.group("items")))
        else:
            yield match.group("text")
    for match in _RMTREE.finditer(code):
        yield f"rm -rf {match.group('path')}"
    for match in _BACKTICKS.finditer(code):
        yield match.group(1)
