"""Files people send temper on Slack, downloaded so the agent can read them.

Each file of a message goes to `{directory}/slack/{channel}-{ts}/{name}`; what could not be kept
comes back as a one-line note for the message text ("[attached file x was not received: ...]")
so the agent can tell the person, instead of failing the whole message.

Invariants: the bot token is sent only to Slack (slack.com and its subdomains, or the configured
API host); a file over the size limit is not kept, not even in part; names are reduced to
`[A-Za-z0-9._-]`, so no name leaves its folder.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import aiohttp


class SlackFiles:
    def __init__(
        self,
        session: aiohttp.ClientSession,
        bot_token: str,
        directory: Path | None,
        max_bytes: int,
        api_host: str,
    ) -> None:
        self.session = session
        self.bot_token = bot_token
        self.directory = directory
        self.max_bytes = max_bytes
        self.api_host = api_host

    async def receive(self, files: list[dict[str, Any]], folder: str) -> tuple[list[str], list[str]]:
        """Paths of the files saved under `folder`, and a note for each file that was not."""
        paths: list[str] = []
        notes: list[str] = []
        for file in files:
            name = _safe_name(file.get("name") or file.get("id") or "file")
            url = file.get("url_private_download") or file.get("url_private") or ""
            problem = self._problem(file, url)
            if problem is None:
                assert self.directory is not None
                target = self.directory / "slack" / folder / name
                problem = await self._fetch(url, target)
                if problem is None:
                    paths.append(str(target))
                    continue
            notes.append(f"[attached file {name} was not received: {problem}]")
        return paths, notes

    def _problem(self, file: dict[str, Any], url: str) -> str | None:
        if self.directory is None:
            return "this temper keeps no files from Slack (no workspace directory)"
        if not url:
            return "Slack gave no download link (the file may be hidden or deleted)"
        if int(file.get("size") or 0) > self.max_bytes:
            return f"larger than {self.max_bytes >> 20} MiB"
        host = urlsplit(url).hostname or ""
        if not (host == "slack.com" or host.endswith(".slack.com") or host == self.api_host):
            return "not hosted by Slack"  # the bot token goes only to Slack
        return None

    async def _fetch(self, url: str, target: Path) -> str | None:
        target.parent.mkdir(parents=True, exist_ok=True)
        size = 0
        try:
            async with self.session.get(
                url, headers={"Authorization": f"Bearer {self.bot_token}"}
            ) as response:
                if response.status != 200:
                    return f"Slack answered HTTP {response.status}"
                with target.open("wb") as out:
                    async for chunk in response.content.iter_chunked(1 << 16):
                        size += len(chunk)
                        if size > self.max_bytes:
                            break
                        out.write(chunk)
        except (aiohttp.ClientError, TimeoutError) as error:
            target.unlink(missing_ok=True)
            return f"download failed ({type(error).__name__})"
        if size > self.max_bytes:
            target.unlink()
            return f"larger than {self.max_bytes >> 20} MiB"
        return None


def _safe_name(name: str) -> str:
    cleaned = re.sub(r"[^A-Za-z0-9._-]+", "_", Path(name).name).strip("._")
    return cleaned[:120] or "file"
