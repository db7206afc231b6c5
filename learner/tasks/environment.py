"""What a terminal-bench task's environment needs: which files make its workspace, and why it
might need its own Docker image instead of any sandbox.

Without Docker, a task runs in an ordinary sandbox whose workspace holds the files of
`environment/` (the Dockerfile and other build files excluded). That is faithful only when the
image adds nothing else, so `docker_needs` lists, in words, everything that breaks it:

- a Dockerfile that RUNs commands (installs packages, builds, creates state);
- COPY/ADD to a place outside the image's working directory, or from a URL;
- services in a docker-compose file;
- an instruction, test or solution that names container paths: the image's WORKDIR (/app),
  /tests, /solution, or Harbor's reward files under /logs/verifier.

An empty list means the task runs here as it would in its image.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterable, Mapping
from pathlib import PurePosixPath

from learner.tasks.task import FileContent

BUILD_FILES = frozenset(
    {"Dockerfile", "docker-compose.yaml", "docker-compose.yml", "compose.yaml", ".dockerignore"}
)
CONTAINER_PATHS = {
    "/tests": "expects its tests at /tests",
    "/solution": "expects its solution at /solution",
    "/logs/verifier": "writes its reward under /logs/verifier",
}
_NEUTRAL = frozenset(
    "FROM ARG ENV LABEL MAINTAINER EXPOSE USER CMD ENTRYPOINT SHELL STOPSIGNAL HEALTHCHECK VOLUME".split()
)
_SHOWN_CHARS = 60


def workspace_files(environment: Mapping[str, FileContent]) -> dict[str, FileContent]:
    """The files of `environment/` that go into the workspace: all but its top-level build files."""
    return {path: content for path, content in environment.items() if path not in BUILD_FILES}


def docker_needs(environment: Mapping[str, FileContent], scripts: Iterable[str]) -> tuple[str, ...]:
    """Why the task needs its own image: from its build files, and from `scripts` (the
    instruction, tests and solution texts) naming container paths."""
    needs: list[str] = []
    workdir = "/"
    dockerfile = environment.get("Dockerfile")
    if isinstance(dockerfile, str):
        workdir, found = _dockerfile_needs(dockerfile)
        needs.extend(found)
    needs.extend(
        f"defines services in {name}" for name in sorted(BUILD_FILES & set(environment)) if "compose" in name
    )
    texts = list(scripts)
    named = dict(CONTAINER_PATHS)
    if workdir != "/":
        named[workdir] = f"refers to {workdir}, the image's working directory"
    for path, why in named.items():
        pattern = re.compile(rf"(?<![\w./-]){re.escape(path)}(?![\w.-])")
        if any(pattern.search(text) for text in texts):
            needs.append(why)
    return tuple(dict.fromkeys(needs))


def _dockerfile_needs(text: str) -> tuple[str, list[str]]:
    """(the final WORKDIR, the reasons the Dockerfile's steps need an image)."""
    workdir, needs = "/", []
    for line in _instructions(text):
        keyword, _, rest = line.partition(" ")
        keyword, rest = keyword.upper(), rest.strip()
        if keyword == "WORKDIR":
            workdir = str(PurePosixPath(workdir) / rest.strip("\"'"))
        elif keyword == "RUN":
            needs.append(f"its Dockerfile runs `{_short(rest)}`")
        elif keyword in ("COPY", "ADD"):
            needs.extend(_copy_needs(keyword, rest, workdir))
        elif keyword not in _NEUTRAL:
            needs.append(f"its Dockerfile uses {keyword}")
    return workdir, needs


def _copy_needs(keyword: str, rest: str, workdir: str) -> list[str]:
    try:
        args = [arg for arg in shlex.split(rest) if not arg.startswith("--")]
    except ValueError:
        return [f"its Dockerfile has a {keyword} line that cannot be read: {_short(rest)}"]
    if len(args) < 2:
        return [f"its Dockerfile has an incomplete {keyword}: {_short(rest)}"]
    *sources, target = args
    needs = [f"its Dockerfile fetches {s}" for s in sources if "://" in s]
    destination = PurePosixPath(workdir) / target
    inside = destination == PurePosixPath(workdir) or PurePosixPath(workdir) in destination.parents
    if not inside:
        needs.append(f"its Dockerfile copies {' '.join(sources)} to {target}, outside the workspace")
    return needs


def _instructions(text: str) -> list[str]:
    """Dockerfile instructions, continuation lines joined, comments dropped."""
    instructions, current = [], ""
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.endswith("\\"):
            current += line[:-1].strip() + " "
            continue
        instructions.append((current + line).strip())
        current = ""
    if current.strip():
        instructions.append(current.strip())
    return instructions


def _short(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= _SHOWN_CHARS else text[: _SHOWN_CHARS - 1] + "…"
