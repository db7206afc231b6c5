"""The ways in, and the composition root: the only package that sees all the others.

cli/        the `temper` command, one module per command group
config/     the settings: models, loading from files and the environment, the init template
telegram/   temper on Telegram
slack/      temper on Slack
daemon/     the service: channels, the durable inbox and its dispatch, the schedule, status
channel.py  what every chat platform offers the daemon (the `Channel` protocol)
assembly.py the agent a config describes
learning.py the learning cycle the config describes (`temper learn`, the nightly job)
nightly/    the learning cycle in a worker process: its progress, cancellation, the daemon's side
"""

__all__: list[str] = []
