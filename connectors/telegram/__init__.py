"""temper on Telegram: a message comes in as an update (updates.py: polling, or webhook.py's
HTTP endpoint), becomes an `Inbound`, and the reply goes out through channel.py, rendered and
split by format.py; request.py is python-telegram-bot's HTTP layer on aiohttp."""

from connectors.telegram.channel import TelegramChannel

__all__ = ["TelegramChannel"]
