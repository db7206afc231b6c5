"""temper on Slack: events arrive over Socket Mode or http.py's signed HTTP endpoint and become
`Inbound`s in channel.py; format.py turns Markdown into mrkdwn; files.py downloads what people
attach."""

from connectors.slack.channel import SlackChannel

__all__ = ["SlackChannel"]
