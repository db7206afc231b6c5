"""A seeded corpus that measures the redactor (memory/secrets.py): fake secrets planted where an
agent's terminal work meets them, and ordinary lines that must come through untouched.

    figures = measure_redaction()            # the held-out seed
    figures["secrets_caught"] / figures["secrets_planted"], figures["false_positive_lines"]

Secrets: FORMATS (more than 40 kinds: provider keys, tokens, private keys, passwords, database
URLs, bearer and basic credentials) in five placements: a command, a command's output, JSON, an
env or config file, a URL. A secret counts as caught when no 8-character piece of it (the whole
of a shorter one) is left in the redacted text, except pieces its surroundings hold anyway (a
key's public prefix, a word that is also the variable's name). A redactor that replaces only
part of a key has not caught it.

Ordinary lines: what terminal work prints and edits: listings, git, package managers with their
hashes, containers, logs with UUIDs and trace ids, base64 data, code with long identifiers,
environment dumps, prompts that mention passwords without holding one. A line is a false
positive when redacting it changes anything.

Seeds: the redactor's settings (its entropy limits, which names count as secret, which values
count as references) were chosen by looking at what the development seeds miss and flag
(DEVELOPMENT_SEED, and 2, 5-10). Seed 3 was the first held-out seed; it missed one secret in 252
(`PGPASSWORD=...`: a name whose words are glued together, which names.py now reads) and was
retired to development. The figures docs/security.md and bench/security.py report come from
HELDOUT_SEED, run only after the last change. Every value here is random and fake: none is, or
was, a live credential.
"""

from __future__ import annotations

import base64
import json
import random
import re
import string
import uuid
from collections.abc import Callable
from dataclasses import dataclass

DEVELOPMENT_SEED = 1
HELDOUT_SEED = 4

ALNUM = string.ascii_letters + string.digits
HEX = "0123456789abcdef"
URLSAFE = ALNUM + "-_"
B64 = ALNUM + "+/"
UPPER_ALNUM = string.ascii_uppercase + string.digits
MARKER = re.compile(r"\[REDACTED:\w+\]")


@dataclass(frozen=True)
class Planted:
    kind: str  # the format's name
    placement: str  # command, output, json, env_file or url
    secret: str
    text: str


def pick(rng: random.Random, alphabet: str, n: int) -> str:
    return "".join(rng.choice(alphabet) for _ in range(n))


def b64(data: bytes, url: bool = False) -> str:
    return (base64.urlsafe_b64encode(data) if url else base64.b64encode(data)).decode()


def jwt(rng: random.Random) -> str:
    header = b64(json.dumps({"alg": "HS256", "typ": "JWT"}).encode(), url=True).rstrip("=")
    claims = {
        "sub": str(rng.randint(1000, 99999)),
        "name": rng.choice(NAMES),
        "iat": rng.randint(1_600_000_000, 1_800_000_000),
    }
    payload = b64(json.dumps(claims).encode(), url=True).rstrip("=")
    return f"{header}.{payload}.{b64(rng.randbytes(32), url=True).rstrip('=')}"


def pem(rng: random.Random) -> str:
    label = rng.choice(["RSA PRIVATE KEY", "PRIVATE KEY", "EC PRIVATE KEY", "OPENSSH PRIVATE KEY"])
    body = b64(rng.randbytes(rng.choice([120, 240, 400])))
    lines = [body[i : i + 64] for i in range(0, len(body), 64)]
    return "\n".join([f"-----BEGIN {label}-----", *lines, f"-----END {label}-----"])


def password(rng: random.Random) -> str:
    shape = rng.randrange(5)
    if shape == 0:
        return rng.choice(["x", "pw", "abc", "1234", "letmein"])
    if shape == 1:
        return rng.choice(WORDS) + str(rng.randint(1, 9999)) + rng.choice("!@#$%&*")
    if shape == 2:
        return "-".join(rng.choice(WORDS) for _ in range(4))
    return pick(rng, ALNUM + "!#%^*_-", rng.randint(10, 24))


# name: (variable the secret usually lives in, generator, whether it has a recognisable shape)
FORMATS: dict[str, tuple[str, Callable[[random.Random], str], bool]] = {
    "openai_project": (
        "OPENAI_API_KEY",
        lambda r: f"sk-proj-{pick(r, URLSAFE, 58)}T3BlbkFJ{pick(r, URLSAFE, 58)}",
        True,
    ),
    "openai_legacy": (
        "OPENAI_API_KEY",
        lambda r: f"sk-{pick(r, ALNUM, 20)}T3BlbkFJ{pick(r, ALNUM, 20)}",
        True,
    ),
    "anthropic": ("ANTHROPIC_API_KEY", lambda r: f"sk-ant-api03-{pick(r, URLSAFE, 93)}AA", True),
    "aws_access_key_id": (
        "AWS_ACCESS_KEY_ID",
        lambda r: "AKIA" + pick(r, "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", 16),
        True,
    ),
    "aws_secret_access_key": ("AWS_SECRET_ACCESS_KEY", lambda r: pick(r, B64, 40), False),
    "github_classic": ("GITHUB_TOKEN", lambda r: "ghp_" + pick(r, ALNUM, 36), True),
    "github_fine_grained": (
        "GH_TOKEN",
        lambda r: f"github_pat_11{pick(r, UPPER_ALNUM, 20)}_{pick(r, ALNUM, 59)}",
        True,
    ),
    "github_app": (
        "GITHUB_APP_TOKEN",
        lambda r: r.choice(["ghs_", "gho_", "ghu_"]) + pick(r, ALNUM, 36),
        True,
    ),
    "gitlab": ("GITLAB_TOKEN", lambda r: "glpat-" + pick(r, URLSAFE, 20), True),
    "slack_bot": (
        "SLACK_BOT_TOKEN",
        lambda r: f"xoxb-{pick(r, string.digits, 12)}-{pick(r, string.digits, 13)}-{pick(r, ALNUM, 24)}",
        True,
    ),
    "slack_app": (
        "SLACK_APP_TOKEN",
        lambda r: f"xapp-1-A0{pick(r, UPPER_ALNUM, 9)}-{pick(r, string.digits, 13)}-{pick(r, HEX, 64)}",
        True,
    ),
    "slack_webhook": (
        "SLACK_WEBHOOK_URL",
        lambda r: (
            f"https://hooks.slack.com/services/T{pick(r, UPPER_ALNUM, 8)}/B{pick(r, UPPER_ALNUM, 10)}/{pick(r, ALNUM, 24)}"
        ),
        True,
    ),
    "stripe_live": ("STRIPE_SECRET_KEY", lambda r: "sk_live_" + pick(r, ALNUM, r.choice([24, 99])), True),
    "stripe_restricted": (
        "STRIPE_RESTRICTED_KEY",
        lambda r: "rk_live_" + pick(r, ALNUM, r.choice([24, 99])),
        True,
    ),
    "stripe_webhook": ("STRIPE_WEBHOOK_SECRET", lambda r: "whsec_" + pick(r, ALNUM, 32), True),
    "huggingface": ("HF_TOKEN", lambda r: "hf_" + pick(r, ALNUM, 34), True),
    "google_api": ("GOOGLE_API_KEY", lambda r: "AIza" + pick(r, URLSAFE, 35), True),
    "xai": ("XAI_API_KEY", lambda r: "xai-" + pick(r, ALNUM, 80), True),
    "groq": ("GROQ_API_KEY", lambda r: "gsk_" + pick(r, ALNUM, 52), True),
    "openrouter": ("OPENROUTER_API_KEY", lambda r: "sk-or-v1-" + pick(r, HEX, 64), True),
    "jwt": ("ACCESS_TOKEN", jwt, True),
    "private_key": ("PRIVATE_KEY", pem, True),
    "telegram": (
        "TELEGRAM_BOT_TOKEN",
        lambda r: f"{r.randint(10**8, 10**10 - 1)}:AA{pick(r, URLSAFE, 33)}",
        True,
    ),
    "discord": (
        "DISCORD_BOT_TOKEN",
        lambda r: f"M{pick(r, ALNUM, 25)}.{pick(r, URLSAFE, 6)}.{pick(r, URLSAFE, 27)}",
        True,
    ),
    "sendgrid": ("SENDGRID_API_KEY", lambda r: f"SG.{pick(r, URLSAFE, 22)}.{pick(r, URLSAFE, 43)}", True),
    "twilio_api_key": ("TWILIO_API_KEY", lambda r: "SK" + pick(r, HEX, 32), True),
    "twilio_auth_token": ("TWILIO_AUTH_TOKEN", lambda r: pick(r, HEX, 32), False),
    "npm": ("NPM_TOKEN", lambda r: "npm_" + pick(r, ALNUM, 36), True),
    "pypi": ("PYPI_TOKEN", lambda r: "pypi-AgEIcHlwaS5vcmc" + pick(r, URLSAFE, 120), True),
    "mailchimp": ("MAILCHIMP_API_KEY", lambda r: f"{pick(r, HEX, 32)}-us{r.randint(1, 21)}", True),
    "azure_storage": ("AZURE_STORAGE_KEY", lambda r: b64(r.randbytes(64)), False),
    "digitalocean": ("DIGITALOCEAN_TOKEN", lambda r: "dop_v1_" + pick(r, HEX, 64), True),
    "shopify": ("SHOPIFY_ACCESS_TOKEN", lambda r: "shpat_" + pick(r, HEX, 32), True),
    "vault": ("VAULT_TOKEN", lambda r: "hvs." + pick(r, URLSAFE, r.randint(24, 90)), True),
    "databricks": ("DATABRICKS_TOKEN", lambda r: "dapi" + pick(r, HEX, 32), True),
    "age": (
        "AGE_SECRET_KEY",
        lambda r: "AGE-SECRET-KEY-1" + pick(r, "QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L", 58),
        True,
    ),
    "google_oauth_secret": ("GOOGLE_CLIENT_SECRET", lambda r: "GOCSPX-" + pick(r, URLSAFE, 28), True),
    "docker_hub": ("DOCKERHUB_TOKEN", lambda r: "dckr_pat_" + pick(r, URLSAFE, 27), True),
    "replicate": ("REPLICATE_API_TOKEN", lambda r: "r8_" + pick(r, ALNUM, 37), True),
    "perplexity": ("PERPLEXITY_API_KEY", lambda r: "pplx-" + pick(r, ALNUM, 48), True),
    "linear": ("LINEAR_API_KEY", lambda r: "lin_api_" + pick(r, ALNUM, 40), True),
    "langsmith": ("LANGSMITH_API_KEY", lambda r: f"lsv2_pt_{pick(r, HEX, 32)}_{pick(r, HEX, 10)}", True),
    "datadog": ("DD_API_KEY", lambda r: pick(r, HEX, 32), False),
    "heroku": ("HEROKU_API_KEY", lambda r: str(uuid.UUID(bytes=r.randbytes(16), version=4)), False),
    "mistral": ("MISTRAL_API_KEY", lambda r: pick(r, ALNUM, 32), False),
    "generic_api_key": ("PAYMENTS_API_KEY", lambda r: pick(r, ALNUM, r.randint(24, 48)), False),
    "generic_secret_token": ("SECRET_TOKEN", lambda r: pick(r, URLSAFE, r.randint(20, 48)), False),
    "session_secret": ("SESSION_SECRET", lambda r: pick(r, HEX, 64), False),
    "password": ("DB_PASSWORD", password, False),
    "bearer_opaque": ("AUTH_TOKEN", lambda r: pick(r, URLSAFE, r.randint(32, 64)), False),
}


def _commands(name: str, value: str, rng: random.Random) -> list[str]:
    host = rng.choice(HOSTS)
    return [
        f"export {name}={value}",
        f'export {name}="{value}" && python deploy.py --env prod',
        f"{name}={value} npm run release",
        f'curl -sS -H "Authorization: Bearer {value}" https://{host}/v1/models | jq .',
        f"curl -s https://{host}/v2/items -H 'X-API-Key: {value}' -o items.json",
        f"docker run --rm -e {name}={value} ghcr.io/acme/worker:1.4.2",
        f"gh secret set {name} --body {value}",
        f"python scripts/sync.py --api-key {value} --dry-run",
        f"kubectl create secret generic app-env --from-literal={name.lower()}={value}",
    ]


def _outputs(name: str, value: str, rng: random.Random) -> list[str]:
    lines = rng.sample(ENV_LINES, 3)
    lines.insert(rng.randrange(4), f"{name}={value}")
    return [
        "$ cat .env\n" + "\n".join(lines),
        "$ printenv | sort\n" + "\n".join(sorted(lines)),
        f"2024-05-{rng.randint(10, 28)} 12:0{rng.randint(0, 9)}:31 DEBUG request headers: {{'Authorization': 'Bearer {value}', 'Accept': 'application/json'}}",
        f"{name.lower()}: {value}",
        f'Configuration loaded:\n  region: eu-west-1\n  {name.lower()}: "{value}"\n  retries: 3',
    ]


def _json(name: str, value: str, rng: random.Random) -> list[str]:
    key = name.lower()
    return [
        json.dumps({key: value, "region": "us-east-1", "timeout": 30}),
        json.dumps({"service": rng.choice(SERVICES), "credentials": {key: value}}, indent=2),
        json.dumps(
            {"headers": {"Authorization": f"Bearer {value}"}, "url": f"https://{rng.choice(HOSTS)}/v1"}
        ),
        f'    "{key}": "{value}",',
    ]


def _env_files(name: str, value: str, rng: random.Random) -> list[str]:
    return [
        f'{name}="{value}"',
        f"{name}='{value}'",
        f"{name}={value}",
        f"[default]\nregion = us-east-1\n{name.lower()} = {value}",
        f'{name.lower()} = "{value}"',
        f"  {name.lower()}: {value}",
    ]


def _urls(name: str, value: str, rng: random.Random) -> list[str]:
    host = rng.choice(HOSTS)
    return [
        f"https://{host}/api/v1/export?{rng.choice(['api_key', 'token', 'access_token', 'key'])}={value}&format=csv",
        f"GET /callback?code=200&access_token={value} HTTP/1.1",
        f"git clone https://oauth2:{value}@gitlab.com/acme/infra.git",
        f"https://deploy:{value}@{host}/releases/latest",
    ]


def _files(name: str, value: str, rng: random.Random) -> list[str]:
    """Credential files as `cat` shows them."""
    user = rng.choice(NAMES)
    return [
        f"Access key ID,Secret access key\nAKIA{pick(rng, UPPER_ALNUM, 16)},{value}",
        f"//registry.npmjs.org/:_authToken={value}",
        f"[pypi]\n  username = __token__\n  password = {value}",
        f"apiVersion: v1\nkind: Secret\ndata:\n  {name.lower()}: {b64(value.encode())}",
        json.dumps({"auths": {"registry.example.com": {"auth": b64(f"{user}:{value}".encode())}}}),
        f"https://{user}:{value}@github.com",
        f"machine api.{rng.choice(HOSTS)} login {user} password {value}",
    ]


def _database_urls(value: str, rng: random.Random) -> list[str]:
    user, host = rng.choice(["app", "admin", "postgres", "svc_etl"]), rng.choice(HOSTS)
    return [
        f"DATABASE_URL=postgres://{user}:{value}@{host}:5432/prod",
        f"mysql://{user}:{value}@{host}:3306/shop?charset=utf8mb4",
        f"REDIS_URL=redis://:{value}@{host}:6379/0",
        f"mongodb+srv://{user}:{value}@cluster0.{pick(rng, 'abcdefghijklmnopqrstuvwxyz0123456789', 5)}.mongodb.net/app",
        f"amqp://{user}:{value}@rabbit.internal:5672/%2F",
        f'psql "postgresql://{user}:{value}@{host}/analytics" -c "select 1"',
    ]


def _passwords(value: str, rng: random.Random) -> list[str]:
    return [
        f"password: {value}",
        f'mysql -u root -p"{value}" -e "show databases"',
        f"mysql -h {rng.choice(HOSTS)} -u admin --password={value} shop",
        f"sshpass -p '{value}' ssh deploy@{rng.choice(HOSTS)}",
        f'{{"username": "admin", "password": "{value}"}}',
        f"PGPASSWORD={value} pg_dump -h localhost shop > shop.sql",
        f"curl -u admin:{value} https://{rng.choice(HOSTS)}/api/status",
        f"echo 'DB_PASSWORD={value}' >> .env",
        f"docker login -u deploy -p {value} registry.example.com",
        f"db:\n  user: app\n  password: {value}",
    ]


def _basic_headers(value: str, rng: random.Random) -> list[str]:
    encoded = b64(f"{rng.choice(['admin', 'ci', 'deploy'])}:{value}".encode())
    return [
        f"Authorization: Basic {encoded}",
        f"curl -H 'Authorization: Basic {encoded}' https://{rng.choice(HOSTS)}/",
    ]


PLACEMENTS = {
    "command": _commands, "output": _outputs, "json": _json, "env_file": _env_files, "url": _urls, "file": _files,
}  # fmt: skip


def plant_secrets(seed: int, per_format: int = 5) -> list[Planted]:
    """`per_format` secrets of every format, each in a placement drawn at random."""
    rng = random.Random(seed)
    planted: list[Planted] = []
    for kind, (name, make, _) in FORMATS.items():
        for _ in range(per_format):
            value = make(rng)
            if kind == "password":
                placement, text = "command", rng.choice(_passwords(value, rng))
            elif kind == "private_key":
                placement, text = _private_key_text(value, rng)
            elif kind in ("slack_webhook",):
                placement, text = (
                    "output",
                    rng.choice([value, f"SLACK_WEBHOOK_URL={value}", json.dumps({"webhook": value})]),
                )
            elif rng.random() < 0.12:
                placement, text = "url", rng.choice(_database_urls(value, rng))
            else:
                placement = rng.choice(sorted(PLACEMENTS))
                text = rng.choice(PLACEMENTS[placement](name, value, rng))
                value = as_held(value, text)  # a Kubernetes secret, a docker auth: base64
            planted.append(Planted(kind, placement, value, text))
    basic = password(rng) + pick(rng, ALNUM, 6)
    for text in _basic_headers(basic, rng):
        encoded = text.split("Basic ")[1].split("'")[0]
        planted.append(Planted("basic_auth_header", "command", encoded, text))
    return planted


def _private_key_text(value: str, rng: random.Random) -> tuple[str, str]:
    choice = rng.randrange(3)
    if choice == 0:
        return "output", f"$ cat ~/.ssh/id_rsa\n{value}\n$ ls"
    if choice == 1:
        return "json", json.dumps({"type": "service_account", "private_key_id": pick(rng, HEX, 40),
                                   "private_key": value + "\n", "client_email": "ci@acme.iam.gserviceaccount.com"})  # fmt: skip
    return "env_file", f'PRIVATE_KEY="{value}"'


def leaked(secret: str, text: str, redacted: str) -> bool:
    """Whether a piece of `secret` that its surroundings do not hold is still in `redacted`:
    any 8 characters of a long secret; a short one (`x`, `pw`) as a word of its own."""
    redacted = MARKER.sub("\0", redacted)
    if len(secret) < 8:
        alone = re.compile(rf"(?<![A-Za-z0-9]){re.escape(secret)}(?![A-Za-z0-9])")
        return len(alone.findall(redacted)) > len(alone.findall(text)) - 1
    context = text.replace(secret, "\0")
    for start in range(len(secret) - 7):
        piece = secret[start : start + 8]
        if piece in redacted and piece not in context:
            return True
    return False


def as_held(value: str, text: str) -> str:
    """What `text` holds of `value`: itself, or the base64 token that decodes to hold it."""
    if value in text:
        return value
    for token in re.findall(r"[A-Za-z0-9+/]{8,}={0,2}", text):
        try:
            if value in base64.b64decode(token, validate=True).decode(errors="ignore"):
                return token
        except ValueError:
            continue
    raise ValueError(f"{value!r} is not in {text!r}")


# --- ordinary lines --------------------------------------------------------------------------

NAMES = ["ana", "bob", "chen", "dara", "eli", "fatima", "gus", "hana"]
WORDS = ["orange", "river", "castle", "violet", "summer", "marble", "copper", "falcon", "meadow", "lantern"]
HOSTS = ["api.example.com", "db.internal", "10.0.3.17", "staging.acme.io", "reports.acme.dev", "localhost"]
SERVICES = ["billing", "search", "ingest", "auth-gateway", "notifier", "scheduler"]
ENV_LINES = [
    "NODE_ENV=production", "LOG_LEVEL=info", "PORT=8080", "REGION=eu-west-1", "WORKERS=4",
    "TZ=UTC", "FEATURE_FLAGS=search,export", "CACHE_TTL=300", "APP_NAME=acme-api",
]  # fmt: skip
EXTS = ["py", "ts", "go", "rs", "md", "json", "yaml", "toml", "txt", "csv", "lock", "sh"]


def _path(rng: random.Random) -> str:
    parts = rng.sample(["src", "app", "lib", "tests", "core", "utils", "api", "models", "internal", "cmd"], 2)
    stem = "_".join(
        rng.sample(
            ["user", "cache", "token", "key", "store", "handler", "config", "secret", "auth", "parser"], 2
        )
    )
    return f"{'/'.join(parts)}/{stem}.{rng.choice(EXTS)}"


def _identifier(rng: random.Random) -> str:
    words = rng.sample(["get", "user", "token", "count", "parse", "secret", "key", "refresh", "build", "cache",
                        "password", "hash", "validate", "request", "session", "auth", "config", "load"], 4)  # fmt: skip
    if rng.random() < 0.5:
        return "_".join(words)
    return words[0] + "".join(w.title() for w in words[1:])


def _ordinary_generators() -> list[Callable[[random.Random], str]]:
    def hexs(r: random.Random, n: int) -> str:
        return pick(r, HEX, n)

    def when(r: random.Random) -> str:
        return f"2024-0{r.randint(1, 9)}-{r.randint(10, 28)}T{r.randint(10, 23)}:{r.randint(10, 59)}:{r.randint(10, 59)}Z"

    # fmt: off
    return [
        lambda r: f"-rw-r--r--  1 {r.choice(NAMES)} staff  {r.randint(10, 99999):>6} Mar {r.randint(1, 28):>2} 10:{r.randint(10, 59)} {_path(r).split('/')[-1]}",
        lambda r: f"{hexs(r, 7)} {r.choice(['fix', 'add', 'refactor', 'docs:', 'test:'])} {r.choice(WORDS)} {_identifier(r)}",
        lambda r: f"commit {hexs(r, 40)}",
        lambda r: f"Merge: {hexs(r, 7)} {hexs(r, 7)}",
        lambda r: f"{hexs(r, 64)}  {_path(r)}",
        lambda r: f"{hexs(r, 40)}  dist/{r.choice(SERVICES)}-{r.randint(0, 9)}.{r.randint(0, 20)}.tar.gz",
        lambda r: f"{hexs(r, 32)}  {_path(r)}",
        lambda r: f"    --hash=sha256:{hexs(r, 64)} \\",
        lambda r: f'      "integrity": "sha512-{b64(r.randbytes(64))}",',
        lambda r: f'      "resolved": "https://registry.npmjs.org/{r.choice(WORDS)}/-/{r.choice(WORDS)}-{r.randint(1, 9)}.{r.randint(0, 9)}.{r.randint(0, 9)}.tgz",',
        lambda r: f"github.com/{r.choice(NAMES)}/{r.choice(WORDS)} v1.{r.randint(0, 30)}.{r.randint(0, 9)} h1:{b64(r.randbytes(32))}",
        lambda r: f'checksum = "{hexs(r, 64)}"',
        lambda r: f"{hexs(r, 12)}   {r.choice(SERVICES)}:latest   {r.randint(2, 9)} days ago   {r.randint(50, 900)}MB",
        lambda r: f"Digest: sha256:{hexs(r, 64)}",
        lambda r: f"{r.choice(SERVICES)}-{hexs(r, 10)}-{pick(r, 'bcdfghjklmnpqrstvwxz2456789', 5)}   1/1   Running   0   {r.randint(1, 59)}m",
        lambda r: f'{{"level":"info","ts":"{when(r)}","request_id":"{uuid.UUID(bytes=r.randbytes(16))}","msg":"{r.choice(WORDS)} done","ms":{r.randint(1, 900)}}}',
        lambda r: f"trace_id={hexs(r, 32)} span_id={hexs(r, 16)} status=200 duration={r.random():.3f}s",
        lambda r: f'  "id": "{uuid.UUID(bytes=r.randbytes(16))}",',
        lambda r: b64(r.randbytes(57)),
        lambda r: b64(" ".join(r.choice(WORDS) for _ in range(12)).encode())[:76],
        lambda r: f"echo '{b64(r.randbytes(r.randint(12, 45)))}' | base64 -d > blob.bin",
        lambda r: f"  tls.crt: {b64(r.randbytes(48))}",
        lambda r: f"data:image/png;base64,iVBORw0KGgo{b64(r.randbytes(45))}",
        lambda r: f"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI{b64(r.randbytes(32))[:43]} {r.choice(NAMES)}@laptop",
        lambda r: f"{r.choice(HOSTS)} ecdsa-sha2-nistp256 AAAAE2VjZHNhLXNoYTItbmlzdHAyNTYAAAAIbmlzdHAyNTYAAABBB{b64(r.randbytes(48))}",
        lambda r: f"def {_identifier(r)}(self, {_identifier(r)}: str, {_identifier(r)}: int = {r.randint(0, 9)}) -> bool:",
        lambda r: f"    {_identifier(r)} = {_identifier(r)}.{_identifier(r)}({_identifier(r)}, timeout={r.randint(1, 60)})",
        lambda r: f"const {_identifier(r)} = await {_identifier(r)}({_identifier(r)}, {{ retries: {r.randint(1, 5)} }});",
        lambda r: f"  File \"/usr/lib/python3.11/site-packages/{_path(r)}\", line {r.randint(1, 900)}, in {_identifier(r)}",
        lambda r: f"{_path(r)}:{r.randint(1, 400)}:{r.randint(1, 80)}: error: {r.choice(['unused import', 'undefined name'])} '{_identifier(r)}'",
        lambda r: f"tests/{_path(r).split('/')[-1]}::test_{_identifier(r).lower()} PASSED [{r.randint(1, 99)}%]",
        lambda r: f"{r.choice(NAMES)}  {r.randint(100, 99999)}  {r.random() * 9:.1f}  {r.random() * 5:.1f} {r.randint(10000, 999999)} {r.randint(1000, 99999)} ?  S  10:{r.randint(10, 59)}  0:0{r.randint(0, 9)} python -m {r.choice(SERVICES)}.worker",
        lambda r: f"/dev/sda{r.randint(1, 4)}  {r.randint(20, 900)}G  {r.randint(1, 400)}G  {r.randint(1, 500)}G  {r.randint(1, 99)}% /",
        lambda r: f"{r.randint(1, 9999)}K\t./{_path(r)}",
        lambda r: f"Downloading {r.choice(WORDS)}-{r.randint(0, 9)}.{r.randint(0, 30)}.{r.randint(0, 9)}-py3-none-any.whl ({r.randint(10, 900)} kB)",
        lambda r: f"Successfully installed {r.choice(WORDS)}-{r.randint(0, 9)}.{r.randint(0, 9)} {r.choice(['scikit-learn', 'huggingface-hub', 'xai-sdk', 'tokenizers', 'keyring'])}-{r.randint(0, 9)}.{r.randint(0, 9)}",
        lambda r: r.choice(ENV_LINES + ["PWD=/home/" + r.choice(NAMES) + "/src", "OLDPWD=/tmp", "SHELL=/bin/bash", f"HOSTNAME={hexs(r, 12)}",
                                        f"SSH_AUTH_SOCK=/tmp/ssh-{pick(r, ALNUM, 10)}/agent.{r.randint(100, 9999)}", "LANG=C.UTF-8",
                                        f"GOOGLE_APPLICATION_CREDENTIALS=/home/{r.choice(NAMES)}/.config/gcloud/sa.json",
                                        "KEY_FILE=/etc/ssl/private/server.key", f"PASSWORD_MIN_LENGTH={r.randint(8, 16)}",
                                        f"TOKEN_TTL_SECONDS={r.randint(60, 86400)}"]),
        lambda r: r.choice([
            f"export OPENAI_API_KEY=$(cat ~/.config/openai/{r.choice(WORDS)})", 'api_key = os.environ["API_KEY"]',
            "password = getpass.getpass()", '"password": "${DB_PASSWORD}",', "PASSWORD=<your password here>",
            'token: "{{ vault_token }}"', "echo $GITHUB_TOKEN | gh auth login --with-token",
            'curl -H "Authorization: Bearer $TOKEN" https://api.example.com/v1/me', f"max_tokens: {r.randint(16, 4096)}",
            '  "pad_token": "<pad>",', '  "eos_token": "</s>",', f"    max_new_tokens={r.randint(16, 512)},",
            "Enter passphrase for key '/home/ana/.ssh/id_ed25519':", "passwd: password updated successfully",
            f"[sudo] password for {r.choice(NAMES)}:", "Permission denied (publickey,password).",
            "PasswordAuthentication no", 'secret "db-credentials" created', "secret/app-env configured",
            '  "token_type": "bearer",', f"  expires_in: {r.randint(60, 7200)}", "password authentication failed for user \"app\"",
            "docker login --username deploy --password-stdin < token.txt", "if not password:", f"key = cache_key({_identifier(r)})",
            "self.password = password", f"    secret_name = args.secret_name or '{r.choice(WORDS)}-secret'",
            '  secretName: tls-acme', "  valueFrom:\n    secretKeyRef:", "        key: password", f"sort_key = lambda row: row[{r.randint(0, 5)}]",
            "tokens = tokenizer.encode(text)", f"num_tokens: {r.randint(1, 9999)}", f"git remote add origin git@github.com:{r.choice(NAMES)}/{r.choice(WORDS)}.git",
            f"https://github.com/{r.choice(NAMES)}/{r.choice(WORDS)}/pull/{r.randint(1, 999)}", f"ssh://git@{r.choice(HOSTS)}:2222/{r.choice(WORDS)}.git",
            f"{r.choice(NAMES)}:x:{r.randint(1000, 1999)}:{r.randint(1000, 1999)}:{r.choice(NAMES)},,,:/home/{r.choice(NAMES)}:/bin/bash",
            "password_hash = bcrypt.hashpw(raw.encode(), bcrypt.gensalt())", "def check_password(self, password: str) -> bool:",
        ]),
        lambda r: f'{r.choice(HOSTS)} - - [10/Oct/2024:13:{r.randint(10, 59)}:{r.randint(10, 59)} +0000] "GET /api/v1/{r.choice(WORDS)}?page={r.randint(1, 9)}&id={uuid.UUID(bytes=r.randbytes(16))} HTTP/1.1" 200 {r.randint(100, 9999)}',
        lambda r: f"  {r.choice(['wheel', 'sdist'])} {r.choice(WORDS)}_{r.choice(WORDS)}-{r.randint(0, 9)}.{r.randint(0, 9)}-cp311-cp311-manylinux_2_17_x86_64.whl",
        lambda r: f"{_identifier(r).upper()}_{r.choice(['ENABLED', 'LIMIT', 'DIR', 'TIMEOUT'])}={r.choice(['true', '30', '/var/lib/acme', '512'])}",
        lambda r: f"Ran {r.randint(1, 900)} tests in {r.random() * 90:.3f}s ({r.randint(0, 9)} skipped); build {hexs(r, 8)} in {r.randint(1, 99)}.{r.randint(0, 9)}s",
        lambda r: f"{pick(r, string.ascii_lowercase, 5)}_{pick(r, string.ascii_lowercase, 8)}_{r.randint(1000, 99999)}.parquet  {r.randint(1, 999)}.{r.randint(0, 9)} MiB",
        lambda r: f"image: ghcr.io/acme/{r.choice(SERVICES)}@sha256:{hexs(r, 64)}",
        lambda r: f"ETag: \"{hexs(r, 32)}\"  Content-Length: {r.randint(100, 99999)}",
        lambda r: r.choice([
            f'"id": "chatcmpl-{pick(r, ALNUM, 29)}",', f'"id": "msg_01{pick(r, ALNUM, 22)}",', f'"id": "toolu_01{pick(r, ALNUM, 22)}",',
            f'"tool_call_id": "call_{pick(r, ALNUM, 24)}"', f'"payment_intent": "pi_3{pick(r, ALNUM, 23)}"', f"request-id: req_011C{pick(r, ALNUM, 20)}",
            f'"customer": "cus_{pick(r, ALNUM, 14)}"', f'"object_key": "uploads/{uuid.UUID(bytes=r.randbytes(16))}.png"',
            f'"key": "user:{r.randint(1, 99999)}:profile"', f'cache key: {hexs(r, 40)}', "  sort_key: created_at",
            f"X-Request-Id: {uuid.UUID(bytes=r.randbytes(16))}", f'"etag": "W/\\"{hexs(r, 32)}\\""',
        ]),
        lambda r: f'{{"sha": "{hexs(r, 40)}", "node_id": "C_kwDO{pick(r, ALNUM, 16)}", "url": "https://api.github.com/repos/acme/{r.choice(WORDS)}/commits/{hexs(r, 40)}"}}',
    ]
    # fmt: on


def ordinary_lines(seed: int, count: int = 2400) -> list[str]:
    """`count` ordinary lines, every generator drawn equally often."""
    rng = random.Random(seed * 7919 + 1)
    generators = _ordinary_generators()
    lines: list[str] = []
    while len(lines) < count:
        lines += generators[len(lines) % len(generators)](rng).split("\n")
    return lines[:count]


def measure_redaction(seed: int = HELDOUT_SEED) -> dict[str, int]:
    """The redactor on the corpus of `seed`: secrets planted and caught, ordinary lines and
    those it changed."""
    from memory import redact

    planted = plant_secrets(seed)
    caught = sum(1 for p in planted if not leaked(p.secret, p.text, redact(p.text).text))
    lines = ordinary_lines(seed)
    flagged = sum(1 for line in lines if redact(line).text != line)
    return {
        "secrets_planted": len(planted),
        "secrets_caught": caught,
        "false_positive_lines": flagged,
        "ordinary_lines": len(lines),
    }
