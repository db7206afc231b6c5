"""The commented files `temper init` writes: config.toml with every default, secrets.toml empty.

``connectors.config.default_config_text`` fills in the platform's data dir; a test checks that
the result loads to exactly the defaults of ``connectors.config.Config`` and mentions every key.
"""

DEFAULT_CONFIG_TEMPLATE = """\
# temper configuration. Every key is optional: delete a line and its default applies.
#
# Any key can also be set from the environment as TEMPER_<SECTION>__<KEY>, which wins over this
# file, e.g. TEMPER_MODELS__PLANNER__MODEL=ollama/qwen3:8b or TEMPER_SANDBOX__NETWORK=true.
# Values are read as TOML when they parse (numbers, true/false, ["lists"]), as text otherwise.
#
# Secrets (API keys, bot tokens, the Slack signing secret) never go in this file. Put them in
# secrets.toml next to it (chmod 600; `temper init` creates it) or in the environment:
#   models.<slot>.api_key   the variable named by api_key_env (e.g. OPENAI_API_KEY),
#                           or TEMPER_MODELS__<SLOT>__API_KEY
#   telegram.bot_token      TEMPER_TELEGRAM__BOT_TOKEN
#   slack.bot_token         TEMPER_SLACK__BOT_TOKEN
#   slack.app_token         TEMPER_SLACK__APP_TOKEN (Socket Mode)
#   slack.signing_secret    TEMPER_SLACK__SIGNING_SECRET (HTTP events)

# Where temper keeps its database, skills and executor adapters.
# Default: the platform's user data directory, here {data_dir}
# data_dir = "~/temper-data"

[memory]
# The SQLite database. A relative path is taken inside data_dir.
db_path = "temper.db"
# Whose past conversations a memory search may see: "user" (only the asking user's) or "all".
search_scope = "user"

# Model slots. model is a litellm model string, "provider/name": "openai/gpt-4o-mini",
# "anthropic/claude-sonnet-4-5", "ollama/qwen3:8b", "hosted_vllm/Qwen/Qwen3-8B".
#   api_base     the server's URL, for self-hosted or OpenAI-compatible servers (optional),
#                e.g. "http://127.0.0.1:8000/v1"; `temper doctor` checks GET {{api_base}}/models
#   api_key_env  the environment variable that holds this slot's API key ("" for none)
#   temperature  sampling temperature, 0 to 2
#   max_tokens   the most tokens one reply may have
#   fallbacks    models to try, in order, when this one fails

# The planner talks to people, recalls memories and calls tools.
[models.planner]
model = "openai/gpt-4o-mini"
# api_base = "http://127.0.0.1:8000/v1"
api_key_env = "OPENAI_API_KEY"
temperature = 0.7
max_tokens = 4096
fallbacks = []

# The executor does terminal work in the sandbox; the learner trains it nightly.
[models.executor]
model = "openai/gpt-4o-mini"
# api_base = "http://127.0.0.1:8000/v1"
api_key_env = "OPENAI_API_KEY"
temperature = 0.7
max_tokens = 4096
fallbacks = []

# The judge scores outcomes that have no verifier.
[models.judge]
model = "openai/gpt-4o-mini"
# api_base = "http://127.0.0.1:8000/v1"
api_key_env = "OPENAI_API_KEY"
temperature = 0.0
max_tokens = 1024
fallbacks = []

[sandbox]
# "auto" picks the strongest backend present: docker, then bwrap. "local" runs commands as
# plain subprocesses: the weakest isolation, used only when chosen here.
backend = "auto"
# Seconds one command may run before it is killed.
timeout_s = 120.0
# Memory limit for the sandbox, in megabytes.
memory_mb = 1024
# Whether sandboxed commands may reach the network.
network = false

[executor]
# Terminal work goes to the executor sub-agent (the planner's terminal_task tool); false gives the
# planner a plain one-command shell instead.
enabled = true
# Which model does executor work: "planner" (the planner model, until a small executor exists),
# "openai" (the [models.executor] slot: any OpenAI-compatible server, vLLM or `temper serve
# executor`), or "local" (a Hugging Face model loaded in this process from model_dir).
backend = "planner"
# A model directory (local) or the executor's tokenizer directory (openai, planner: re-tokenises
# text when a server returns no token ids).
# model_dir = "/path/to/model"
# adapter_dir = "/path/to/adapter"
# Terminal work goes to the executor model once its held-out success rate reaches this.
threshold = 0.6
# At most this many model turns per terminal task.
max_turns = 8

[telegram]
enabled = false
# Numeric Telegram user ids allowed to talk to the bot; anyone else needs a pairing code.
allowed_users = []

[slack]
enabled = false
# Slack member ids allowed to talk to the bot, like "U012AB3CD".
allowed_users = []
"""

DEFAULT_SECRETS_TEMPLATE = """\
# temper secrets. Keep this file private (chmod 600): temper refuses to read it otherwise.
# Environment variables win over this file (see config.toml).

# [models.planner]
# api_key = "sk-..."

# [telegram]
# bot_token = "123456789:AA..."

# [slack]
# bot_token = "xoxb-..."
# app_token = "xapp-..."        # Socket Mode
# signing_secret = "..."        # HTTP events
"""
