"""Reading Telegram updates as what the daemon takes: `Inbound`, `ButtonPress`, `Reaction`.

Which updates are for temper:
- private chats: every message from a person;
- groups: a message that mentions the bot (@name or a text mention), replies to one of the bot's
  messages, or is a command (`/new`, or `/new@this_bot`; `/new@other_bot` is not ours). The
  mention is cut from the text and `/cmd@this_bot` becomes `/cmd`, so the daemon reads one form;
- forum topics: the topic's `message_thread_id` is the thread (other replies in a group are not
  threads: a chat without topics has one session per person);
- a button press whose data `button_data` made; a 👍 / 👎 newly set on a message.
Everything else (edits, channel posts, other bots, stickers without text) is acknowledged and
dropped: `read` returns None.

Ids: `platform_message_id` and a reaction's `message_id` are `"<chat id>:<message id>"`, because
Telegram numbers messages per chat; a button press is `"callback:<query id>"` and a reaction
`"update:<update id>"` (both unique per bot, and the same when Telegram re-sends the update).

Files (documents, photos, audio, video, voice) are downloaded to
`<workspace_dir>/<chat id>/<message id>-<file name>` and listed in `Inbound.attachments`; a file
that cannot be had (over the Bot API's 20 MB download limit, gone, or no workspace_dir) becomes a
bracketed note in the text instead. A network failure raises: the update is read again later.
"""

from __future__ import annotations

import re
from pathlib import Path

from telegram import (
    Audio,
    Bot,
    CallbackQuery,
    Document,
    Message,
    MessageEntity,
    PhotoSize,
    ReactionTypeEmoji,
    Update,
    Video,
    Voice,
)
from telegram.constants import ChatType
from telegram.error import BadRequest, InvalidToken

from connectors.channel import ButtonPress, Delivered, Reaction
from runtime import Inbound

__all__ = ["CHOICES", "PLATFORM", "UpdateReader", "button_data"]

PLATFORM = "telegram"
CHOICES = ("yes", "always", "no")
THUMBS_UP, THUMBS_DOWN = "👍", "👎"
DOWNLOAD_LIMIT = 20 * 1024 * 1024  # the Bot API serves files up to 20 MB
CALLBACK_DATA_LIMIT = 64  # bytes
Media = Document | PhotoSize | Audio | Video | Voice


def button_data(approval_id: str, choice: str) -> str:
    """The callback data of an approval button: `<choice>:<approval id>`, at most 64 bytes."""
    data = f"{choice}:{approval_id}"
    if choice not in CHOICES or len(data.encode()) > CALLBACK_DATA_LIMIT:
        raise ValueError(
            f"approval buttons carry '{choice}:{approval_id}' in at most {CALLBACK_DATA_LIMIT} "
            f"bytes, with a choice in {CHOICES}: use a shorter approval id"
        )
    return data


class UpdateReader:
    """Reads updates for one bot; call after the bot is initialized (its id and name known)."""

    def __init__(self, bot: Bot, workspace_dir: Path | None) -> None:
        self._bot = bot
        self._workspace_dir = workspace_dir
        name = re.escape(bot.username)
        self._mention = re.compile(rf"(?<![\w@])@{name}(?!\w)", re.IGNORECASE)
        self._command = re.compile(rf"^(/\w+)@{name}(?!\w)", re.IGNORECASE)

    async def read(self, update: Update) -> Delivered | None:
        if update.message is not None:
            return await self._inbound(update.message)
        if update.callback_query is not None:
            return self._press(update.callback_query)
        if update.message_reaction is not None:
            return self._reaction(update)
        return None

    async def _inbound(self, message: Message) -> Inbound | None:
        sender, chat = message.from_user, message.chat
        if sender is None or sender.is_bot or chat.type == ChatType.CHANNEL:
            return None
        is_group = chat.type in (ChatType.GROUP, ChatType.SUPERGROUP)
        text = message.text or message.caption or ""
        if is_group and not self._addressed(message):
            return None
        text = self._command.sub(r"\1", self._mention.sub("", text))
        text = re.sub(r"[ \t]{2,}", " ", text).strip()
        attachments, notes = await self._download(message)
        text = "\n".join(filter(None, [text, *notes]))
        if not text and not attachments:
            return None
        return Inbound(
            platform=PLATFORM,
            chat_id=str(chat.id),
            user_id=str(sender.id),
            text=text,
            thread_id=str(message.message_thread_id) if message.is_topic_message else "",
            is_group=is_group,
            platform_message_id=f"{chat.id}:{message.message_id}",
            user_name=sender.username or sender.full_name,
            attachments=tuple(attachments),
        )

    def _addressed(self, message: Message) -> bool:
        """In a group: is this message for temper?"""
        replied = message.reply_to_message
        if replied and replied.from_user and replied.from_user.id == self._bot.id:
            return True
        kinds: list[str | None] = [
            MessageEntity.MENTION,
            MessageEntity.TEXT_MENTION,
            MessageEntity.BOT_COMMAND,
        ]
        marked = message.parse_entities(kinds) or message.parse_caption_entities(kinds)
        me = f"@{self._bot.username}".lower()
        for entity, value in marked.items():
            if entity.type == MessageEntity.MENTION and value.lower() == me:
                return True
            if entity.type == MessageEntity.TEXT_MENTION and entity.user and entity.user.id == self._bot.id:
                return True
            if entity.type == MessageEntity.BOT_COMMAND and entity.offset == 0:
                _, _, addressee = value.partition("@")
                if not addressee or f"@{addressee}".lower() == me:
                    return True
        return False

    async def _download(self, message: Message) -> tuple[list[str], list[str]]:
        """Paths of the files the message carries, and notes on those that could not be had."""
        paths: list[str] = []
        notes: list[str] = []
        for media, name in _files(message):
            size = media.file_size or 0
            if self._workspace_dir is None:
                notes.append(f"[{name} was sent, but temper has no workspace to store files]")
            elif size > DOWNLOAD_LIMIT:
                notes.append(f"[{name} ({size / 2**20:.0f} MB) is over Telegram's 20 MB limit for bots]")
            else:
                target = self._workspace_dir / str(message.chat.id) / f"{message.message_id}-{name}"
                target.parent.mkdir(parents=True, exist_ok=True)
                partial = target.with_name(f".{target.name}.part")
                try:
                    telegram_file = await self._bot.get_file(media.file_id)
                    try:
                        await telegram_file.download_to_drive(partial)
                    except InvalidToken as exc:  # python-telegram-bot's name for any 404
                        raise BadRequest(f"the file is gone ({exc.message})") from exc
                except BadRequest as exc:  # too big, or gone: retrying will not help
                    notes.append(f"[{name} could not be downloaded: {exc.message}]")
                    continue
                partial.replace(target)  # a half-written file never looks complete
                paths.append(str(target))
        return paths, notes

    def _press(self, query: CallbackQuery) -> ButtonPress | None:
        choice, _, approval_id = (query.data or "").partition(":")
        if choice not in CHOICES or not approval_id or query.message is None:
            return None
        return ButtonPress(
            platform=PLATFORM,
            chat_id=str(query.message.chat.id),
            user_id=str(query.from_user.id),
            approval_id=approval_id,
            choice=choice,
            platform_event_id=f"callback:{query.id}",
        )

    def _reaction(self, update: Update) -> Reaction | None:
        reacted = update.message_reaction
        if reacted is None or reacted.user is None:  # anonymous (a group admin): no one to credit
            return None

        def emoji(reactions: tuple[object, ...]) -> set[str]:
            return {r.emoji for r in reactions if isinstance(r, ReactionTypeEmoji)}

        added = emoji(reacted.new_reaction) - emoji(reacted.old_reaction)
        if THUMBS_UP not in added and THUMBS_DOWN not in added:
            return None
        return Reaction(
            platform=PLATFORM,
            chat_id=str(reacted.chat.id),
            user_id=str(reacted.user.id),
            message_id=f"{reacted.chat.id}:{reacted.message_id}",
            positive=THUMBS_UP in added,
            platform_event_id=f"update:{update.update_id}",
        )


def _files(message: Message) -> list[tuple[Media, str]]:
    """(media, a safe file name) for each file in the message; for a photo, its largest size."""
    found: list[tuple[Media, str | None, str]] = []
    if message.document:
        found.append((message.document, message.document.file_name, "document"))
    if message.photo:
        found.append((message.photo[-1], None, "photo.jpg"))
    if message.audio:
        found.append((message.audio, message.audio.file_name, "audio"))
    if message.video:
        found.append((message.video, message.video.file_name, "video.mp4"))
    if message.voice:
        found.append((message.voice, None, "voice.ogg"))
    return [(media, _safe_name(name) or default) for media, name, default in found]


def _safe_name(name: str | None) -> str:
    """A file name that stays inside its folder: no path, no leading dot, tame characters."""
    cleaned = re.sub(r"[^\w.\-]+", "_", Path(name or "").name).lstrip("._")
    return cleaned[-100:]
