"""connectors.config: real TOML files in tmp_path, environment layers, error messages, secrets."""

from __future__ import annotations

import os
import tomllib
from pathlib import Path

import pytest
from pydantic import BaseModel

from connectors.config import (
    SECRET_KEYS,
    Config,
    ConfigError,
    MemoryConfig,
    default_config_text,
    default_secrets_text,
    load_config,
    mask,
)

SECRET = "sk-live-0123456789abcdefWXYZ"


@pytest.fixture(autouse=True)
def platform_dirs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Point platformdirs into tmp_path so no test reads or writes the real user dirs."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg-config"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg-data"))
    return tmp_path


def write(path: Path, text: str, mode: int = 0o644) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    path.chmod(mode)
    return path


def problems_of(config_text: str, tmp_path: Path, environ: dict[str, str] | None = None) -> list[str]:
    path = write(tmp_path / "config.toml", config_text)
    with pytest.raises(ConfigError) as caught:
        load_config(path, environ or {})
    return caught.value.problems


# Defaults and files ---------------------------------------------------------------------------


def test_no_file_at_the_default_path_means_defaults(tmp_path: Path) -> None:
    config = load_config(environ={})

    assert config.data_dir == tmp_path / "xdg-data" / "temper"
    assert config.memory.db_path == tmp_path / "xdg-data" / "temper" / "temper.db"
    assert config.models.planner.model == "openai/gpt-4o-mini"
    assert config.models.judge.temperature == 0.0
    assert config.sandbox.backend == "auto"
    assert config.sandbox.network is False
    assert config.telegram.enabled is False


def test_default_config_text_loads_to_the_defaults(tmp_path: Path) -> None:
    path = write(tmp_path / "config.toml", default_config_text())

    assert load_config(path, {}) == Config()


def test_default_config_text_documents_every_key() -> None:
    text = default_config_text()
    active = tomllib.loads(text)

    def keys(model: type[BaseModel], prefix: str = "") -> list[str]:
        found = []
        for name, field in model.model_fields.items():
            if isinstance(field.annotation, type) and issubclass(field.annotation, BaseModel):
                found += keys(field.annotation, f"{prefix}{name}.")
            elif name not in SECRET_KEYS:
                found.append(f"{prefix}{name}")
        return found

    for key in keys(Config):
        *tables, name = key.split(".")
        table = active
        for part in tables:
            table = table[part]
        # data_dir and api_base stay commented out: their defaults are "the platform's" and none
        assert name in table or f"# {name} = " in text, key
    for secret in SECRET_KEYS:
        assert f"{secret} =" not in text.replace(f"# {secret} =", "")


def test_default_secrets_text_is_valid_toml_with_nothing_set() -> None:
    assert tomllib.loads(default_secrets_text()) == {}


def test_file_values_paths_and_slot_defaults(tmp_path: Path) -> None:
    path = write(
        tmp_path / "config.toml",
        f"""
        data_dir = "{tmp_path / "data"}"
        [memory]
        db_path = "sub/mem.db"
        [models.judge]
        model = "ollama/qwen3:8b"
        api_base = "http://127.0.0.1:11434/v1/"
        api_key_env = ""
        [sandbox]
        backend = "bwrap"
        memory_mb = 512
        [telegram]
        enabled = true
        allowed_users = [42, 43]
        """,
    )
    config = load_config(path, {})

    assert config.memory.db_path == tmp_path / "data" / "sub" / "mem.db"
    judge = config.models.judge
    assert judge.model == "ollama/qwen3:8b"
    assert judge.api_base == "http://127.0.0.1:11434/v1"
    assert judge.api_key_env is None
    assert (judge.temperature, judge.max_tokens) == (0.0, 1024)  # the judge's own defaults
    assert config.sandbox.backend == "bwrap" and config.sandbox.memory_mb == 512
    assert config.telegram.allowed_users == [42, 43]


def test_home_and_absolute_paths(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    path = write(tmp_path / "c.toml", f'data_dir = "~/d"\n[memory]\ndb_path = "{tmp_path}/abs.db"\n')

    config = load_config(path, {})

    assert config.data_dir == tmp_path / "home" / "d"
    assert config.memory.db_path == tmp_path / "abs.db"


def test_config_path_from_temper_config(tmp_path: Path) -> None:
    path = write(tmp_path / "elsewhere.toml", "[sandbox]\ntimeout_s = 5\n")

    assert load_config(environ={"TEMPER_CONFIG": str(path)}).sandbox.timeout_s == 5.0


# Environment ----------------------------------------------------------------------------------


def test_environment_overrides_the_file(tmp_path: Path) -> None:
    path = write(tmp_path / "config.toml", "[models.planner]\ntemperature = 0.3\n")
    config = load_config(
        path,
        {
            "TEMPER_MODELS__PLANNER__TEMPERATURE": "1.5",
            "TEMPER_MODELS__PLANNER__MODEL": "hosted_vllm/Qwen/Qwen3-8B",
            "TEMPER_MODELS__PLANNER__FALLBACKS": '["openai/gpt-4o", "anthropic/claude-x"]',
            "TEMPER_SANDBOX__NETWORK": "true",
            "TEMPER_MEMORY__DB_PATH": "2024",  # a text field keeps its text
            "TEMPER_SLACK__ALLOWED_USERS": '["U012AB3CD"]',
            "UNRELATED": "x",
        },
    )

    planner = config.models.planner
    assert planner.temperature == 1.5
    assert planner.model == "hosted_vllm/Qwen/Qwen3-8B"
    assert planner.fallbacks == ["openai/gpt-4o", "anthropic/claude-x"]
    assert config.sandbox.network is True
    assert config.memory.db_path == config.data_dir / "2024"
    assert config.slack.allowed_users == ["U012AB3CD"]


# Error messages -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            '[models.planner]\ntemperature = "hot"\n',
            "models.planner.temperature: must be a number between 0 and 2, got 'hot'",
        ),
        ("[memroy]\ndb_path = 'x.db'\n", "unknown key 'memroy' (did you mean 'memory'?)"),
        (
            "[models.planner]\ntemprature = 1\n",
            "models.planner: unknown key 'temprature' (did you mean 'temperature'?)",
        ),
        ("[modles.planner]\n", "unknown key 'modles' (did you mean 'models'?)"),
        (
            "[models.critic]\n",
            "models: unknown key 'critic' (known keys: executor, judge, planner)",
        ),
        (
            '[sandbox]\nbackend = "dockr"\n',
            "sandbox.backend: must be one of 'auto', 'docker', 'bwrap', 'local', got 'dockr' "
            "(did you mean 'docker'?)",
        ),
        (
            '[models.executor]\nmodel = "gpt4"\n',
            "models.executor.model: must be a litellm model string 'provider/name' like "
            "'openai/gpt-4o-mini', got 'gpt4'",
        ),
        (
            '[models.judge]\nfallbacks = ["openai/gpt-4o", "claude"]\n',
            "models.judge.fallbacks[1]: must be a litellm model string",
        ),
        (
            '[models.planner]\napi_base = "localhost:8000"\n',
            "models.planner.api_base: must be a URL starting with http:// or https://",
        ),
        (
            "[sandbox]\nmemory_mb = 10\n",
            "sandbox.memory_mb: must be a whole number of megabytes, at least 64, got 10",
        ),
        (
            '[telegram]\nallowed_users = ["bob"]\n',
            "telegram.allowed_users[0]: must be a list of numeric Telegram user ids",
        ),
        ("memory = 3\n", "memory: must be a table [memory], got 3"),
        (  # the gate's margin: a candidate may not be worse by everything
            "[learner]\nnon_inferiority_margin = 1\n",
            "learner.non_inferiority_margin: must be a number from 0 up to, not including, 1, got 1",
        ),
        (  # a table's own check is quoted whole, not as "must be ..., got a table"
            "[learner]\nmicro_batch_tokens = 1000\n",
            "learner: micro_batch_tokens = 1000 is below max_prompt_tokens + max_completion_tokens = 2048: "
            "a micro-batch has to hold the longest call it trains on",
        ),
        (
            '[memory]\nsearch_scope = "all"\n',
            "memory.search_scope: was removed, and 'all' is not possible: the agent's memory "
            "search is always the asking user's own",
        ),
    ],
)
def test_error_says_key_given_and_expected(text: str, expected: str, tmp_path: Path) -> None:
    problems = problems_of(text, tmp_path)

    assert len(problems) == 1
    assert problems[0].startswith(expected)
    assert problems[0].endswith(f"(set in {tmp_path / 'config.toml'})")


def test_a_check_across_tables_is_one_plain_line(tmp_path: Path) -> None:
    problems = problems_of(
        '[learner]\nray_address = "auto"\n[executor]\nbackend = "openai"\n'
        '[models.executor]\nmodel = "openai/qwen"\napi_base = "http://127.0.0.1:8000/v1"\n',
        tmp_path,
    )

    assert problems == [
        "learner.ray_address and a served executor (executor.backend = 'openai' with "
        "models.executor.api_base) are two ways to run the night's replays: Ray workers sample "
        "with the trainer's weights, a served executor through its server; set one of them"
    ]
    # Either one alone is a configuration the night runs.
    load_config(write(tmp_path / "ray.toml", '[learner]\nray_address = "auto"\n'), {})
    served = '[executor]\nbackend = "openai"\n[models.executor]\napi_base = "http://127.0.0.1:8000/v1"\n'
    load_config(write(tmp_path / "served.toml", served), {})


def test_search_scope_is_gone_but_old_configs_still_load(tmp_path: Path) -> None:
    # `temper init` used to write this line; it asked for what is now the only behaviour
    path = write(tmp_path / "config.toml", '[memory]\nsearch_scope = "user"\ndb_path = "m.db"\n')
    config = load_config(path, {})
    widened = problems_of("", tmp_path, {"TEMPER_MEMORY__SEARCH_SCOPE": "all"})

    assert "search_scope" not in MemoryConfig.model_fields and "search_scope =" not in default_config_text()
    assert config.memory.db_path.name == "m.db"
    assert widened == [
        "memory.search_scope: was removed, and 'all' is not possible: the agent's memory search "
        "is always the asking user's own, so one person's conversations never reach another's "
        "prompt (`temper memory search` without --user is the operator's search across everyone); "
        "delete the line (set by TEMPER_MEMORY__SEARCH_SCOPE)"
    ]


def test_every_problem_is_reported_at_once(tmp_path: Path) -> None:
    problems = problems_of('[sandbox]\ntimeout_s = 0\nnetwork = "maybe"\n[memroy]\n', tmp_path)

    assert len(problems) == 3
    assert any(p.startswith("sandbox.timeout_s: must be a number of seconds above 0") for p in problems)
    assert any(p.startswith("sandbox.network: must be true or false, got 'maybe'") for p in problems)


def test_error_names_the_environment_variable(tmp_path: Path) -> None:
    problems = problems_of("", tmp_path, {"TEMPER_SANDBOX__TIMEOUT_S": "soon", "TEMPER_NOPE__X": "1"})

    assert (
        "sandbox.timeout_s: must be a number of seconds above 0 and at most 86400, got 'soon' "
        "(set by TEMPER_SANDBOX__TIMEOUT_S)"
    ) in problems
    assert (
        "unknown key 'nope' (known keys: daemon, data_dir, executor, learner, memory, models, sandbox, skills, slack, telegram, users) "
        "(set by TEMPER_NOPE__X)" in problems
    )


def test_other_temper_variables_belong_to_tools(tmp_path: Path) -> None:
    config = load_config(
        environ={
            "TEMPER_DATA_DIR": str(tmp_path / "d"),
            "TEMPER_DOCKER_DIR": "/x",
            "TEMPER_SANDBOX_IMAGE": "y",
        }
    )

    assert config.data_dir == tmp_path / "d"


def test_malformed_environment_variable_name(tmp_path: Path) -> None:
    assert "cannot tell which key" in problems_of("", tmp_path, {"TEMPER_MEMORY____X": "1"})[0]


def test_invalid_toml_and_missing_explicit_files(tmp_path: Path) -> None:
    assert "not valid TOML" in problems_of("[memory\n", tmp_path)[0]
    with pytest.raises(ConfigError, match=r"does not exist \(run `temper init`"):
        load_config(tmp_path / "missing.toml", {})
    with pytest.raises(ConfigError, match="does not exist"):
        load_config(environ={"TEMPER_CONFIG": str(tmp_path / "missing.toml")})
    with pytest.raises(ConfigError, match="does not exist"):
        load_config(environ={}, secrets_path=tmp_path / "missing-secrets.toml")


# Secrets --------------------------------------------------------------------------------------


def test_mask_shows_at_most_the_last_four_characters() -> None:
    assert mask("sk-abcdefghijklmnop1234") == "sk-…1234"
    assert mask("xoxb-1111-2222-abcdEFGH") == "xoxb-…EFGH"
    assert mask("123456789:AAH-secretpartwxyz") == "…wxyz"
    assert mask("short") == "…"
    assert mask(None) == "(not set)"


def test_secrets_come_from_the_secrets_file_beside_the_config(tmp_path: Path) -> None:
    config_file = write(tmp_path / "config.toml", "[slack]\nenabled = true\n")
    write(
        tmp_path / "secrets.toml",
        f'[telegram]\nbot_token = "tg-{SECRET}"\n[slack]\nsigning_secret = "{SECRET}"\n',
        mode=0o600,
    )

    config = load_config(config_file, {})

    assert config.telegram.bot_token is not None
    assert config.telegram.bot_token.get_secret_value() == f"tg-{SECRET}"
    assert config.slack.signing_secret is not None
    assert config.slack.signing_secret.get_secret_value() == SECRET


def test_api_key_precedence(tmp_path: Path) -> None:
    config_file = write(tmp_path / "config.toml", '[models.executor]\napi_key_env = "MY_KEY"\n')
    write(tmp_path / "secrets.toml", '[models.planner]\napi_key = "from-file-0000"\n', mode=0o600)

    def key(environ: dict[str, str], slot: str = "planner") -> str | None:
        secret = getattr(load_config(config_file, environ).models, slot).api_key
        return None if secret is None else secret.get_secret_value()

    assert key({}) == "from-file-0000"
    assert key({"OPENAI_API_KEY": "from-env-1111"}) == "from-env-1111"
    explicit = {
        "OPENAI_API_KEY": "from-env-1111",
        "TEMPER_MODELS__PLANNER__API_KEY": "explicit-2222",
    }
    assert key(explicit) == "explicit-2222"
    assert key({"OPENAI_API_KEY": "from-env-1111"}, "executor") is None  # it reads MY_KEY
    assert key({"MY_KEY": "mine-3333"}, "executor") == "mine-3333"


def test_secrets_path_from_option_and_environment(tmp_path: Path) -> None:
    secrets = write(tmp_path / "s" / "mine.toml", '[telegram]\nbot_token = "tok-abcdefghijkl"\n', mode=0o600)

    for config in (
        load_config(environ={}, secrets_path=secrets),
        load_config(environ={"TEMPER_SECRETS": str(secrets)}),
    ):
        assert config.telegram.bot_token is not None
        assert config.telegram.bot_token.get_secret_value() == "tok-abcdefghijkl"


@pytest.mark.skipif(os.name != "posix", reason="file modes are POSIX")
@pytest.mark.parametrize("mode", [0o640, 0o604, 0o620])
def test_secrets_file_open_to_others_is_refused(mode: int, tmp_path: Path) -> None:
    config_file = write(tmp_path / "config.toml", "")
    secrets = write(tmp_path / "secrets.toml", f'[telegram]\nbot_token = "{SECRET}"\n', mode=mode)

    with pytest.raises(ConfigError) as caught:
        load_config(config_file, {})

    assert f"chmod 600 {secrets}" in str(caught.value)
    assert SECRET not in str(caught.value)


def test_secret_in_config_file_is_refused_and_masked(tmp_path: Path) -> None:
    problems = problems_of(f'[models.planner]\napi_key = "{SECRET}"\n', tmp_path)

    assert problems[0].startswith("models.planner.api_key: secrets do not belong in config.toml")
    assert "secrets.toml" in problems[0] and "TEMPER_MODELS__PLANNER__API_KEY" in problems[0]
    assert mask(SECRET) in problems[0]
    assert SECRET not in "\n".join(problems)


def test_non_secret_in_secrets_file_is_refused(tmp_path: Path) -> None:
    config_file = write(tmp_path / "config.toml", "")
    write(
        tmp_path / "secrets.toml",
        '[telegram]\nbot_tokn = "x"\n[sandbox]\nnetwork = true\n',
        mode=0o600,
    )

    with pytest.raises(ConfigError) as caught:
        load_config(config_file, {})

    problems = caught.value.problems
    assert any(
        p.startswith("telegram.bot_tokn: secrets.toml holds only secrets") and "'bot_token'" in p
        for p in problems
    )
    assert any(p.startswith("sandbox.network: secrets.toml holds only secrets") for p in problems)


def test_a_key_pasted_into_api_key_env_is_masked_in_the_error(tmp_path: Path) -> None:
    problems = problems_of(f'[models.planner]\napi_key_env = "{SECRET}"\n', tmp_path)

    assert problems[0].startswith("models.planner.api_key_env: must be the name of an environment variable")
    assert SECRET not in problems[0] and mask(SECRET) in problems[0]


def test_invalid_secret_value_is_masked_in_the_error(tmp_path: Path) -> None:
    problems = problems_of(
        "", tmp_path, {"TEMPER_TELEGRAM__BOT_TOKEN": SECRET, "TEMPER_TELEGRAM__ENABLED": "perhaps"}
    )

    assert problems == [
        "telegram.enabled: must be true or false, got 'perhaps' (set by TEMPER_TELEGRAM__ENABLED)"
    ]


def test_secrets_never_appear_in_repr_str_or_dump(tmp_path: Path) -> None:
    config = load_config(
        environ={
            "OPENAI_API_KEY": SECRET,
            "TEMPER_TELEGRAM__BOT_TOKEN": SECRET,
            "TEMPER_SLACK__APP_TOKEN": SECRET,
        }
    )

    assert config.models.planner.api_key is not None
    assert config.models.planner.api_key.get_secret_value() == SECRET
    for text in (repr(config), str(config), config.model_dump_json(), repr(config.model_dump())):
        assert SECRET not in text
        assert SECRET[-8:] not in text


def test_validation_error_is_not_chained(tmp_path: Path) -> None:
    """A chained pydantic error would print the secret in a traceback."""
    with pytest.raises(ConfigError) as caught:
        load_config(environ={"TEMPER_MODELS__PLANNER__API_KEY_ENV": SECRET})

    assert caught.value.__cause__ is None and caught.value.__suppress_context__


# The daemon and its channels --------------------------------------------------------------------


def test_daemon_telegram_and_slack_keys_load(tmp_path: Path) -> None:
    config_file = write(
        tmp_path / "config.toml",
        """
[daemon]
drain_timeout_s = 0
concurrency = 8
approval_timeout_s = 60
pairing_code_ttl_s = 600
learner_schedule = "@daily"
maintenance_schedule = "15 2 * * 1-5"
inbox_prune_schedule = "*/30 * * * *"
inbox_retention_days = 0.5
[telegram]
enabled = true
allowed_users = [123456789, 42]
mode = "webhook"
base_url = "http://127.0.0.1:8081/"
webhook_url = "https://bot.example.org/telegram"
listen_host = "0.0.0.0"
listen_port = 0
poll_timeout_s = 300
[slack]
enabled = true
allowed_users = ["U012AB3CD"]
mode = "http"
base_url = "http://127.0.0.1:3001/api/"
listen_port = 65535
""",
    )
    write(tmp_path / "secrets.toml", '[telegram]\nsecret_token = "A-z_0-9"\n', mode=0o600)

    config = load_config(config_file, {})

    daemon, telegram, slack = config.daemon, config.telegram, config.slack
    assert (daemon.drain_timeout_s, daemon.concurrency, daemon.approval_timeout_s) == (0, 8, 60)
    assert (daemon.pairing_code_ttl_s, daemon.inbox_retention_days) == (600, 0.5)
    assert (daemon.learner_schedule, daemon.maintenance_schedule) == ("@daily", "15 2 * * 1-5")
    assert daemon.inbox_prune_schedule == "*/30 * * * *"
    assert telegram.allowed_users == [123456789, 42] and telegram.mode == "webhook"
    assert telegram.base_url == "http://127.0.0.1:8081"  # the trailing slash dropped
    assert (telegram.listen_host, telegram.listen_port, telegram.poll_timeout_s) == ("0.0.0.0", 0, 300)
    assert telegram.secret_token is not None and telegram.secret_token.get_secret_value() == "A-z_0-9"
    assert (slack.mode, slack.base_url, slack.listen_port) == ("http", "http://127.0.0.1:3001/api", 65535)


def test_daemon_settings_come_from_the_environment(tmp_path: Path) -> None:
    config = load_config(
        write(tmp_path / "config.toml", "[daemon]\nconcurrency = 2\n"),
        {
            "TEMPER_DAEMON__CONCURRENCY": "16",
            "TEMPER_TELEGRAM__ALLOWED_USERS": "[7]",
            "TEMPER_SLACK__MODE": "http",
        },
    )

    assert (config.daemon.concurrency, config.telegram.allowed_users, config.slack.mode) == (16, [7], "http")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("[daemon]\nconcurrency = 0\n", "daemon.concurrency: must be a whole number from 1 to 256, got 0"),
        (
            '[daemon]\nconcurrency = "four"\n',
            "daemon.concurrency: must be a whole number from 1 to 256, got 'four'",
        ),
        (
            "[daemon]\ndrain_timeout_s = -1\n",
            "daemon.drain_timeout_s: must be a number of seconds from 0 to 3600, got -1",
        ),
        (
            "[daemon]\napproval_timeout_s = 0\n",
            "daemon.approval_timeout_s: must be a number of seconds above 0 and at most 86400, got 0",
        ),
        (
            "[daemon]\npairing_code_ttl_s = 10\n",
            "daemon.pairing_code_ttl_s: must be a number of seconds from 60 to 604800 (a week), got 10",
        ),
        (
            '[daemon]\nlearner_schedule = "every night"\n',
            (
                "daemon.learner_schedule: must be a cron expression like '0 3 * * *' or '@daily' ('every night': "
                "a cron expression has 5 fields"
            ),
        ),
        (
            '[daemon]\nmaintenance_schedule = "0 25 * * *"\n',
            (
                "daemon.maintenance_schedule: must be a cron expression like '0 3 * * *' or '@daily' "
                "(hour '25': must be a number from 0 to 23), got '0 25 * * *'"
            ),
        ),
        (
            "[daemon]\ninbox_retention_days = 0\n",
            "daemon.inbox_retention_days: must be a number of days above 0 and at most 3650, got 0",
        ),
        (
            "[daemon]\nworkers = 4\n",
            "daemon: unknown key 'workers' (known keys: approval_timeout_s, concurrency,",
        ),
        ('[telegram]\nmode = "push"\n', "telegram.mode: must be 'polling' or 'webhook', got 'push' (set in"),
        (
            '[telegram]\nmode = "poling"\n',
            "telegram.mode: must be 'polling' or 'webhook', got 'poling' (did you mean 'polling'?)",
        ),
        (
            "[telegram]\npoll_timeout_s = 0\n",
            "telegram.poll_timeout_s: must be a whole number of seconds from 1 to 300, got 0",
        ),
        (
            "[telegram]\nlisten_port = 70000\n",
            "telegram.listen_port: must be a port number from 0 to 65535 (0: any free port), got 70000",
        ),
        (
            '[telegram]\nbase_url = "api.telegram.org"\n',
            "telegram.base_url: must be a URL starting with http:// or https://",
        ),
        (
            '[telegram]\nenabled = true\nmode = "webhook"\n',
            "telegram.webhook_url: must be the public https URL Telegram posts updates to",
        ),
        (
            '[slack]\nmode = "websocket"\n',
            "slack.mode: must be 'socket' or 'http', got 'websocket' (did you mean 'socket'?)",
        ),
        (
            "[slack]\nallowed_users = [123]\n",
            "slack.allowed_users[0]: must be a list of Slack member ids like ['U012AB3CD'], got 123",
        ),
        ('[slack]\nlisten_host = ""\n', "slack.listen_host: must be a host name or IP address, got ''"),
        ('[slack]\nenabled = "sometimes"\n', "slack.enabled: must be true or false, got 'sometimes'"),
    ],
)
def test_a_bad_daemon_or_channel_value_says_what_is_expected(
    text: str, expected: str, tmp_path: Path
) -> None:
    problems = problems_of(text, tmp_path)

    assert len(problems) == 1
    assert problems[0].startswith(expected), problems[0]
    assert "config.toml)" in problems[0]


def test_a_webhook_secret_token_with_other_characters_is_refused_and_masked(tmp_path: Path) -> None:
    config_file = write(tmp_path / "config.toml", "[telegram]\nenabled = true\n")
    write(tmp_path / "secrets.toml", f'[telegram]\nsecret_token = "{SECRET}!"\n', mode=0o600)

    with pytest.raises(ConfigError) as caught:
        load_config(config_file, {})

    [problem] = caught.value.problems
    assert problem.startswith("telegram.secret_token: must be 1 to 256 characters of A-Z, a-z, 0-9, _ and -")
    assert SECRET not in problem
