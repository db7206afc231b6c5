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
#   telegram.secret_token   TEMPER_TELEGRAM__SECRET_TOKEN (webhook mode)

# Where temper keeps its database, skills and executor adapters.
# Default: the platform's user data directory, here {data_dir}
# data_dir = "~/temper-data"

[memory]
# The SQLite database. A relative path is taken inside data_dir. Memory search is always the
# asking user's own: one person's conversations never reach another's prompt.
db_path = "temper.db"

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
# The most seconds one command may run before it is killed: the model may ask for less, never
# more (the shell and the executor both keep to it, and say when they cut a timeout down).
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
# text when a server returns no token ids). For a served executor that `temper learn` trains,
# the served model's own directory: the learner trains its adapter on those base weights.
# model_dir = "/path/to/model"
# adapter_dir = "/path/to/adapter"
# Routing is per kind of task (a cluster of similar instructions): the executor model takes a
# kind once its held-out success on that kind is at least the planner's success on it minus
# routing_margin; until the planner has a measured success on the kind, at least threshold.
threshold = 0.6
routing_margin = 0.05
# The share of a kind's work the planner keeps after the executor took it, so both routes stay
# measured.
exploration = 0.1
# The executor model's sampling temperature, as it serves and as the gate measures it.
temperature = 0.7
# A message that is itself a close instance of a kind the executor has mastered goes to it
# without a planner call (the planner takes over when the run does not finish); how close.
direct_route = true
direct_similarity = 0.6
# At most this many model turns per terminal task.
max_turns = 8
# Where a local model runs: "auto" (cuda when torch sees a GPU, else cpu), "cpu", "cuda", "cuda:N";
# its weights' dtype: "auto" (float32 on CPU, bfloat16 on CUDA), "bfloat16", "float16", "float32";
# and, optionally, the attention implementation transformers uses ("sdpa", "flash_attention_2").
device = "auto"
dtype = "auto"
# attn_implementation = "sdpa"

[learner]
# The nightly cycle (`temper learn`, the daemon's learner_schedule) runs in a worker process.
# Its time budget, in minutes: no new training step starts after it (the gate still runs).
budget_minutes = 120.0
# The worker's niceness (0-19) and its torch threads: the daemon keeps answering while it trains.
nice = 10
torch_threads = 1
# The day's episodes become tasks; the newest heldout_fraction of them are never trained on and
# measure the candidate (the time split).
heldout_fraction = 0.25
# Episodes whose workspace is larger than this are not turned into tasks.
max_workspace_mb = 64
# Planner calls a night, each writing a check script for one of the day's tasks (0: none; tasks are
# scored by their reference outcome). A script is kept only if it passes on the reference end state
# and fails on the start state; it then judges the files instead of the exact end-state comparison.
verifier_calls = 0
# The candidate may be at most this much worse than the current executor on the regression suite.
non_inferiority_margin = 0.05
# GRPO's LoRA learning rate and optimizer updates per replayed batch. 1e-4 and 1 suit models of
# 0.5B parameters and more; the tiny model of `temper quickstart` needs 2e-3 and 2.
learning_rate = 1e-4
updates_per_batch = 1
# The LoRA adapter GRPO trains: its rank, alpha, and the modules it wraps ("all-linear" or a list
# like ["q_proj", "v_proj"]).
lora_rank = 8
lora_alpha = 16.0
lora_target_modules = "all-linear"
# Replays: model turns per attempt and tokens per reply; calls longer than max_prompt_tokens +
# max_completion_tokens are not trained on. A real model's replies want more than the tiny one's 96.
max_turns = 2
max_prompt_tokens = 1952
max_completion_tokens = 96
# Positions one micro-batch of a GRPO update computes (padding included), at least
# max_prompt_tokens + max_completion_tokens; unset, the larger of 8192 and that sum. Lower it when
# the memory estimate says the activations do not fit.
# micro_batch_tokens = 8192
# Recompute each decoder layer in the backward pass instead of keeping its activations: far less
# memory for long replies on a real model (`temper learn` prints the estimate), slower steps.
gradient_checkpointing = false
# After each GRPO step, one supervised step on the reference solutions of the tasks whose attempts
# all failed (tasks with a reference: the synthetic suite's, imported ones with a solution). It
# lifts the tiny model of `temper quickstart`, which turns it on; not yet measured on real models.
guidance = false
# A served executor (backend "openai") samples the replays with other kernels than the trainer's:
# each token's policy gradient is weighted by min(trainer/sampler probability, tis_cap)
# (truncated importance sampling; 0 turns it off). Each step reports the mismatch either way.
tis_cap = 2.0
# Training replays on a Ray cluster (pip install 'temper[scale]'): "auto" joins a running one,
# "local" starts one here, or an address like "ray://head:10001"; empty: replays run in this
# process. ray_workers replay workers each load model_dir from the same path on their node, with
# ray_gpus_per_worker GPUs each (0: CPU).
ray_address = ""
ray_workers = 2
ray_gpus_per_worker = 0.0
# Training across processes (pip install 'temper[gpu]'): "accelerate" runs the night's worker under
# `accelerate launch` with `processes` ranks, one GPU each (on a machine without GPUs, or with
# [executor] device = "cpu", CPU ranks over gloo). Rank 0 replays, gates and promotes; every rank
# trains on its share of each batch and the gradients are summed. "none": one process.
launcher = "none"
processes = 2
# Chats the night's report is sent to, e.g. ["telegram:12345", "slack:C0123"].
report_to = []

[telegram]
enabled = false
# Numeric Telegram user ids allowed to talk to the bot; anyone else needs a pairing code.
allowed_users = []
# "polling": temper asks Telegram for updates (works behind NAT; no public URL needed).
# "webhook": Telegram posts updates to webhook_url, which your reverse proxy (HTTPS) forwards
# to listen_host:listen_port; needs telegram.secret_token in secrets.toml.
mode = "polling"
# The Bot API server: Telegram's, or a self-hosted telegram-bot-api.
base_url = "https://api.telegram.org"
# Webhook mode: the public https URL Telegram posts to; its path is the path listened on.
# webhook_url = "https://bot.example.org/telegram"
listen_host = "127.0.0.1"
listen_port = 8443
# Polling mode: seconds one getUpdates long poll waits for news.
poll_timeout_s = 30

[slack]
enabled = false
# Slack member ids allowed to talk to the bot, like "U012AB3CD".
allowed_users = []
# "socket": Socket Mode, an outbound websocket (no public URL; needs slack.app_token).
# "http": Slack posts events to http://listen_host:listen_port/slack/events behind your HTTPS
# proxy; every request is checked against slack.signing_secret.
mode = "socket"
# The Web API root.
base_url = "https://slack.com/api"
listen_host = "127.0.0.1"
listen_port = 3000

[daemon]
# On the first SIGTERM or Ctrl-C, turns in flight get this many seconds to finish (the rest
# resume at the next start); a second signal stops at once. `temper daemon --drain-timeout`.
drain_timeout_s = 30.0
# Messages answered at once (different sessions; one session is always answered in order).
# Keep it at most the sandboxes kept open (8). `temper daemon --concurrency`.
concurrency = 4
# An approval (a command that needs the operator's yes) nobody answers in time is declined.
approval_timeout_s = 300.0
# How long a pairing code given to a stranger stays valid (`temper pairing approve CODE`).
pairing_code_ttl_s = 3600.0
# The schedule, as cron expressions in local time (minute hour day-of-month month day-of-week,
# or @hourly, @daily, @weekly, @monthly).
# The learner's nightly cycle (when the learner is installed).
learner_schedule = "0 3 * * *"
# Memory maintenance (search index optimize, WAL checkpoint, incremental vacuum): Sundays 04:00.
maintenance_schedule = "0 4 * * 0"
# A bounded merge of the search indexes' segments, so searches stay fast between maintenances:
# hourly, at 17 minutes past.
index_merge_schedule = "17 * * * *"
# Forget answered inbox items older than inbox_retention_days.
inbox_prune_schedule = "30 4 * * *"
inbox_retention_days = 30.0

[users]
# What temper learns about each person (`temper users show USER`). After this many of a
# person's messages in a session, the planner reads them for lasting facts (off the reply path;
# what is left is read when the session ends).
extraction_every_turns = 6
# A session quiet this long has ended: the messages it left unread are read at the person's next
# turn anywhere.
session_idle_end_s = 1800.0
# The prompt's profile of the person speaking: the facts most relevant to the request, then the
# most stable ones, within this many tokens (0: none).
profile_tokens = 300
# How long a code from `/link` stays valid: send it from your other account to join the two.
link_code_ttl_s = 600.0
# "operator": a sent code only asks to link; you decide with `temper users requests`, then
# `temper users approve ID` or `deny ID` (within link_code_ttl_s). "none": it links at once.
link_approval = "none"

[skills]
# The skill library: SKILL.md folders under data_dir/skills (`temper skills list`).
enabled = true
# After a successful turn with at least min_tool_calls tool calls (or an error it got past), the
# planner reviews it and may patch a skill it used, patch a close one, or create one.
review = true
min_tool_calls = 3
# The prompt lists only the skills relevant to the request, one line each, within this budget.
prompt_tokens = 600
# A skill whose turns succeed clearly less often than comparable turns without it, after this
# many rated uses, is revised once by the planner, then archived if it still fails.
min_uses = 8
"""

DEFAULT_SECRETS_TEMPLATE = """\
# temper secrets. Keep this file private (chmod 600): temper refuses to read it otherwise.
# Environment variables win over this file (see config.toml).

# [models.planner]
# api_key = "sk-..."

# [telegram]
# bot_token = "123456789:AA..."
# secret_token = "..."          # webhook mode: 1-256 of A-Z a-z 0-9 _ -

# [slack]
# bot_token = "xoxb-..."
# app_token = "xapp-..."        # Socket Mode
# signing_secret = "..."        # HTTP events
"""
