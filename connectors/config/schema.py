"""temper's settings as pydantic models: every key, its default, and what a right value looks like.

Each field's ``description`` says what a right value looks like; error messages quote it and
docs/configuration.md is generated from it. Secrets (``SECRET_KEYS``) are held as ``SecretStr``.
How the models are filled from files and the environment is ``loading.py``'s job.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated, Literal

from platformdirs import user_data_dir
from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, SecretStr, model_validator

APP_NAME = "temper"
SECRET_KEYS = frozenset({"api_key", "bot_token", "app_token", "signing_secret", "secret_token"})
SLOTS = ("planner", "executor", "judge")


class ConfigError(Exception):
    """The configuration cannot be used; ``problems`` has one line per problem, with its fix."""

    def __init__(self, problems: str | list[str]) -> None:
        self.problems = [problems] if isinstance(problems, str) else list(problems)
        super().__init__("\n".join(self.problems))


# Field types --------------------------------------------------------------------------------


def _model_name(value: str) -> str:
    if not re.fullmatch(r"[A-Za-z0-9_.-]+/\S+", value):
        raise ValueError("a litellm model string 'provider/name' like 'openai/gpt-4o-mini'")
    return value


def _url(value: str) -> str:
    if not re.fullmatch(r"https?://\S+", value):
        raise ValueError("a URL starting with http:// or https://, like 'http://127.0.0.1:8000/v1'")
    return value.rstrip("/")


def _empty_to_none(value: object) -> object:
    return None if value == "" else value


def _cron(value: str) -> str:
    from connectors.daemon.schedule import Cron, CronError  # stdlib only: cheap

    try:
        Cron.parse(value)
    except CronError as error:
        raise ValueError(f"a cron expression like '0 3 * * *' or '@daily' ({error})") from None
    return value.strip()


def _webhook_secret(value: SecretStr | None) -> SecretStr | None:
    if value is not None and not re.fullmatch(r"[A-Za-z0-9_-]{1,256}", value.get_secret_value()):
        raise ValueError("1 to 256 characters of A-Z, a-z, 0-9, _ and -")
    return value


ModelName = Annotated[str, AfterValidator(_model_name)]
Url = Annotated[str, AfterValidator(_url)]
Secret = Annotated[SecretStr | None, BeforeValidator(_empty_to_none)]
CronText = Annotated[str, AfterValidator(_cron)]
WebhookSecret = Annotated[SecretStr | None, BeforeValidator(_empty_to_none), AfterValidator(_webhook_secret)]
Port = Annotated[int, Field(ge=0, le=65535, description="a port number from 0 to 65535 (0: any free port)")]
EnvName = Annotated[
    Annotated[str, Field(pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")] | None,
    BeforeValidator(_empty_to_none),
]
SECRET_HELP = "a secret string, set in secrets.toml or the environment"


# The models: each field's description says what a right value looks like (errors quote it). ---


class Section(BaseModel):
    """A table of the config file: unknown keys are errors, not silently ignored."""

    model_config = ConfigDict(extra="forbid")


class MemoryConfig(Section):
    db_path: Path = Field(Path("temper.db"), description="a file path (relative: inside data_dir)")


class ModelSlot(Section):
    """One model role. The key itself comes from ``api_key_env`` or the secrets, never the file."""

    model: ModelName = Field("openai/gpt-4o-mini", description="a litellm model string")
    api_base: Url | None = Field(None, description="a URL like 'http://127.0.0.1:8000/v1'")
    api_key_env: EnvName = Field(
        "OPENAI_API_KEY",
        description="the name of an environment variable, like 'OPENAI_API_KEY' ('' for none)",
    )
    api_key: Secret = Field(None, description=SECRET_HELP)
    temperature: float = Field(0.7, ge=0, le=2, description="a number between 0 and 2")
    max_tokens: int = Field(4096, ge=1, description="a whole number of tokens, at least 1")
    fallbacks: list[ModelName] = Field(
        default_factory=list, description="a list of litellm model strings like ['openai/gpt-4o']"
    )


# Defaults that differ by slot; applied under what the user wrote, key by key.
SLOT_DEFAULTS: dict[str, dict[str, object]] = {
    "planner": {},
    "executor": {},
    "judge": {"temperature": 0.0, "max_tokens": 1024},
}


class ModelsConfig(Section):
    planner: ModelSlot = Field(default_factory=ModelSlot, description="a table [models.planner]")
    executor: ModelSlot = Field(default_factory=ModelSlot, description="a table [models.executor]")
    judge: ModelSlot = Field(default_factory=ModelSlot, description="a table [models.judge]")

    @model_validator(mode="before")
    @classmethod
    def _slot_defaults(cls, data: object) -> object:
        if not isinstance(data, dict):
            return data
        filled = dict(data)
        for slot, defaults in SLOT_DEFAULTS.items():
            given = filled.get(slot, {})
            if isinstance(given, dict):
                filled[slot] = {**defaults, **given}
        return filled


class SandboxConfig(Section):
    backend: Literal["auto", "docker", "bwrap", "local"] = Field(
        "auto", description="one of 'auto', 'docker', 'bwrap', 'local'"
    )
    timeout_s: float = Field(
        120.0, gt=0, le=86400, description="a number of seconds above 0 and at most 86400"
    )
    memory_mb: int = Field(1024, ge=64, description="a whole number of megabytes, at least 64")
    network: bool = Field(False, description="true or false")


class ExecutorConfig(Section):
    """How terminal work is done: by the executor sub-agent (terminal_task) or a plain shell."""

    enabled: bool = Field(True, description="true or false")
    backend: Literal["planner", "openai", "local"] = Field(
        "planner", description="one of 'planner', 'openai', 'local'"
    )
    model_dir: Path | None = Field(
        None,
        description="a Hugging Face model directory (local; openai: the served model's own directory, "
        "which `temper learn` trains from, or at least its tokenizer; planner: a tokenizer directory)",
    )
    adapter_dir: Path | None = Field(None, description="a PEFT adapter directory")
    threshold: float = Field(0.6, ge=0, le=1, description="a number between 0 and 1")
    max_turns: int = Field(8, ge=1, le=64, description="a whole number from 1 to 64")
    routing_margin: float = Field(0.05, ge=0, le=1, description="a number between 0 and 1")
    exploration: float = Field(0.1, ge=0, le=0.5, description="a number between 0 and 0.5")
    temperature: float = Field(
        0.7, ge=0, le=2, description="a number between 0 and 2: the executor model's sampling temperature"
    )
    direct_route: bool = Field(True, description="true or false")
    direct_similarity: float = Field(0.6, gt=0, le=1, description="a number above 0 and at most 1")
    device: str = Field(
        "auto",
        pattern=r"^(auto|cpu|cuda(:[0-9]+)?)$",
        description="'auto', 'cpu', 'cuda' or 'cuda:N' (auto: cuda when torch sees a GPU, else cpu)",
    )
    dtype: Literal["auto", "bfloat16", "float16", "float32"] = Field(
        "auto",
        description="one of 'auto', 'bfloat16', 'float16', 'float32' (auto: float32 on CPU, bfloat16 on CUDA)",
    )
    attn_implementation: str | None = Field(
        None, min_length=1, description="an attention implementation like 'sdpa' or 'flash_attention_2'"
    )


class LearnerConfig(Section):
    """The nightly learning cycle: its budget, its worker process, and what it trains on."""

    budget_minutes: float = Field(
        120.0, gt=0, le=24 * 60, description="a number of minutes above 0 and at most 1440"
    )
    nice: int = Field(10, ge=0, le=19, description="a whole number from 0 to 19")
    torch_threads: int = Field(1, ge=1, le=256, description="a whole number from 1 to 256")
    heldout_fraction: float = Field(0.25, gt=0, lt=1, description="a number between 0 and 1")
    max_workspace_mb: int = Field(64, ge=1, description="a whole number of megabytes, at least 1")
    verifier_calls: int = Field(0, ge=0, le=1000, description="a whole number from 0 to 1000")
    non_inferiority_margin: float = Field(
        0.05, ge=0, lt=1, description="a number from 0 up to, not including, 1"
    )
    learning_rate: float = Field(1e-4, gt=0, le=1, description="a number above 0 and at most 1")
    updates_per_batch: int = Field(1, ge=1, le=8, description="a whole number from 1 to 8")
    lora_rank: int = Field(8, ge=1, le=1024, description="a whole number from 1 to 1024")
    lora_alpha: float = Field(16.0, gt=0, description="a number above 0")
    lora_target_modules: Literal["all-linear"] | Annotated[list[str], Field(min_length=1)] = Field(
        "all-linear", description="'all-linear' or a list of module names like ['q_proj', 'v_proj']"
    )
    max_turns: int = Field(2, ge=1, le=64, description="a whole number from 1 to 64")
    max_prompt_tokens: int = Field(1952, ge=16, description="a whole number of tokens, at least 16")
    max_completion_tokens: int = Field(96, ge=1, description="a whole number of tokens, at least 1")
    micro_batch_tokens: int | None = Field(
        None,
        ge=16,
        description="a whole number of tokens, at least max_prompt_tokens + max_completion_tokens: the "
        "positions one micro-batch of a GRPO update computes (unset: the larger of 8192 and that sum)",
    )
    gradient_checkpointing: bool = Field(False, description="true or false")
    guidance: bool = Field(False, description="true or false")
    tis_cap: float = Field(
        2.0,
        ge=0,
        description="a number at least 0: the cap C of the truncated importance weight "
        "min(trainer/sampler, C) for a served executor (0 turns the correction off)",
    )
    ray_address: str = Field(
        "",
        description="'' (replays in this process), 'auto', 'local', or a Ray address like 'ray://head:10001'",
    )
    ray_workers: int = Field(
        2, ge=1, le=1024, description="a whole number of Ray replay workers from 1 to 1024"
    )
    ray_gpus_per_worker: float = Field(0.0, ge=0, le=8, description="a number of GPUs from 0 to 8")
    launcher: Literal["none", "accelerate"] = Field(
        "none", description="'none' (one process) or 'accelerate' (processes ranks under accelerate launch)"
    )
    processes: int = Field(
        2, ge=1, le=1024, description="a whole number of training processes from 1 to 1024"
    )
    report_to: list[str] = Field(
        default_factory=list,
        description="a list of chats like ['telegram:12345', 'slack:C0123']",
    )

    @property
    def max_row_tokens(self) -> int:
        """The longest model call a replay trains on: prompt and completion together."""
        return self.max_prompt_tokens + self.max_completion_tokens

    @model_validator(mode="after")
    def _a_micro_batch_holds_the_longest_row(self) -> LearnerConfig:
        if self.micro_batch_tokens is not None and self.micro_batch_tokens < self.max_row_tokens:
            raise ValueError(
                f"micro_batch_tokens = {self.micro_batch_tokens} is below max_prompt_tokens + "
                f"max_completion_tokens = {self.max_row_tokens}: a micro-batch has to hold the longest "
                "call it trains on; raise it, lower those two, or leave it unset"
            )
        return self

    @model_validator(mode="after")
    def _guidance_trains_in_one_process(self) -> LearnerConfig:
        if self.guidance and self.launcher == "accelerate" and self.processes > 1:
            raise ValueError(
                "guidance = true needs one training process (its supervised step would move one "
                "rank's weights alone): set launcher = 'none', processes = 1, or guidance = false"
            )
        return self


class TelegramConfig(Section):
    enabled: bool = Field(False, description="true or false")
    allowed_users: list[int] = Field(
        default_factory=list, description="a list of numeric Telegram user ids like [123456789]"
    )
    bot_token: Secret = Field(None, description=SECRET_HELP)
    mode: Literal["polling", "webhook"] = Field("polling", description="'polling' or 'webhook'")
    base_url: Url = Field(
        "https://api.telegram.org", description="the Bot API root, like 'https://api.telegram.org'"
    )
    webhook_url: Url | None = Field(
        None, description="the public https URL Telegram posts updates to (webhook mode)"
    )
    secret_token: WebhookSecret = Field(None, description=SECRET_HELP)
    listen_host: str = Field("127.0.0.1", min_length=1, description="a host name or IP address")
    listen_port: Port = 8443
    poll_timeout_s: int = Field(30, ge=1, le=300, description="a whole number of seconds from 1 to 300")


class SlackConfig(Section):
    enabled: bool = Field(False, description="true or false")
    allowed_users: list[str] = Field(
        default_factory=list, description="a list of Slack member ids like ['U012AB3CD']"
    )
    bot_token: Secret = Field(None, description=SECRET_HELP)
    app_token: Secret = Field(None, description=SECRET_HELP)
    signing_secret: Secret = Field(None, description=SECRET_HELP)
    mode: Literal["socket", "http"] = Field("socket", description="'socket' or 'http'")
    base_url: Url = Field(
        "https://slack.com/api", description="the Web API root, like 'https://slack.com/api'"
    )
    listen_host: str = Field("127.0.0.1", min_length=1, description="a host name or IP address")
    listen_port: Port = 3000


class DaemonConfig(Section):
    """`temper daemon`: draining, concurrency, approvals, pairing, and the schedule."""

    drain_timeout_s: float = Field(30.0, ge=0, le=3600, description="a number of seconds from 0 to 3600")
    concurrency: int = Field(4, ge=1, le=256, description="a whole number from 1 to 256")
    approval_timeout_s: float = Field(
        300.0, gt=0, le=86400, description="a number of seconds above 0 and at most 86400"
    )
    pairing_code_ttl_s: float = Field(
        3600.0, ge=60, le=7 * 86400, description="a number of seconds from 60 to 604800 (a week)"
    )
    learner_schedule: CronText = Field("0 3 * * *", description="a cron expression")
    maintenance_schedule: CronText = Field("0 4 * * 0", description="a cron expression")
    index_merge_schedule: CronText = Field("17 * * * *", description="a cron expression")
    inbox_prune_schedule: CronText = Field("30 4 * * *", description="a cron expression")
    inbox_retention_days: float = Field(
        30.0, gt=0, le=3650, description="a number of days above 0 and at most 3650"
    )


class UsersConfig(Section):
    """The user model: facts learned about each person, their profile in the prompt, linking."""

    extraction_every_turns: int = Field(6, ge=1, le=100, description="a whole number from 1 to 100")
    session_idle_end_s: float = Field(
        1800.0, ge=0, le=7 * 86400, description="a number of seconds from 0 to 604800 (a week)"
    )
    profile_tokens: int = Field(300, ge=0, le=4000, description="a whole number of tokens from 0 to 4000")
    link_code_ttl_s: float = Field(
        600.0, ge=60, le=86400, description="a number of seconds from 60 to 86400 (a day)"
    )
    link_approval: Literal["none", "operator"] = Field("none", description="one of 'none', 'operator'")


class SkillsConfig(Section):
    """The skill library under data_dir/skills: the prompt's skill lines and the learn stage's review."""

    enabled: bool = Field(True, description="true or false")
    review: bool = Field(True, description="true or false")
    prompt_tokens: int = Field(600, ge=0, le=4000, description="a whole number of tokens from 0 to 4000")
    min_tool_calls: int = Field(3, ge=1, le=100, description="a whole number from 1 to 100")
    min_uses: int = Field(8, ge=2, le=1000, description="a whole number from 2 to 1000")


def default_data_dir() -> Path:
    return Path(user_data_dir(APP_NAME))


class Config(Section):
    """All of temper's settings. Paths come out absolute; ``memory.db_path`` lies under ``data_dir``
    unless it was given as an absolute path."""

    data_dir: Path = Field(default_factory=default_data_dir, description="a directory path")
    memory: MemoryConfig = Field(default_factory=MemoryConfig, description="a table [memory]")
    models: ModelsConfig = Field(default_factory=ModelsConfig, description="a table [models]")
    sandbox: SandboxConfig = Field(default_factory=SandboxConfig, description="a table [sandbox]")
    executor: ExecutorConfig = Field(default_factory=ExecutorConfig, description="a table [executor]")
    learner: LearnerConfig = Field(default_factory=LearnerConfig, description="a table [learner]")
    telegram: TelegramConfig = Field(default_factory=TelegramConfig, description="a table [telegram]")
    slack: SlackConfig = Field(default_factory=SlackConfig, description="a table [slack]")
    daemon: DaemonConfig = Field(default_factory=DaemonConfig, description="a table [daemon]")
    users: UsersConfig = Field(default_factory=UsersConfig, description="a table [users]")
    skills: SkillsConfig = Field(default_factory=SkillsConfig, description="a table [skills]")

    @model_validator(mode="after")
    def _replays_run_one_way(self) -> Config:
        served = self.executor.backend == "openai" and self.models.executor.api_base is not None
        if self.learner.ray_address and served:
            raise ValueError(
                "learner.ray_address and a served executor (executor.backend = 'openai' with "
                "models.executor.api_base) are two ways to run the night's replays: Ray workers sample "
                "with the trainer's weights, a served executor through its server; set one of them"
            )
        return self

    @model_validator(mode="after")
    def _resolve_paths(self) -> Config:
        self.data_dir = self.data_dir.expanduser().absolute()
        db_path = self.memory.db_path.expanduser()
        if not db_path.is_absolute():
            self.memory = self.memory.model_copy(update={"db_path": self.data_dir / db_path})
        return self
