"""`temper trajectories ...`: look at and export the executor's token-level episodes.

The shapes of these commands are a contract other tools script against:
  temper trajectories list [--since T] [--until T] [--min-reward R] [--split S] [--limit N] [--json]
  temper trajectories show ID [--tokenizer DIR]
  temper trajectories export FILE [--format jsonl|parquet|trl] [--with-tokens] [--since T] [--until T]
                                  [--min-reward R] [--split S] [--limit N]
T is an ISO date or time (UTC unless it says otherwise) or an age such as 30m, 24h, 7d.
Exports hold one row per model call and never an episode marked as holding a secret; they
say how many they held back. Every secret in the config is redacted from what they write.
`--format trl` writes executor calls as trl's prompt-completion rows (connectors/trajectories_trl.py),
as JSON Lines or Parquet by FILE's suffix.
"""

from __future__ import annotations

import importlib.util
import json
import re
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from connectors.cli.context import get_config
from connectors.cli.memory import iso, open_store
from connectors.cli.output import cannot_write_exits

if TYPE_CHECKING:
    from memory import RecordedCall, TrajectoryFilter

app = typer.Typer(help="List, show and export the executor's token-level trajectories.", no_args_is_help=True)

_AGE = re.compile(r"(\d+(?:\.\d+)?)\s*([smhdw])")
_AGE_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}

Since = Annotated[
    str | None, typer.Option("--since", help="From this time: ISO date/time or an age (7d, 24h).")
]
Until = Annotated[str | None, typer.Option("--until", help="Before this time: ISO date/time or an age.")]
MinReward = Annotated[
    float | None, typer.Option("--min-reward", help="Only episodes rewarded at least this.")
]
Split = Annotated[str | None, typer.Option("--split", help="train, heldout or live.")]


def parse_time(value: str, now: float | None = None) -> float:
    """Unix seconds for an ISO date/time (naive means UTC) or an age like `7d` (that long ago)."""
    age = _AGE.fullmatch(value.strip())
    if age:
        return (time.time() if now is None else now) - float(age.group(1)) * _AGE_SECONDS[age.group(2)]
    try:
        moment = datetime.fromisoformat(value.strip())
    except ValueError:
        raise typer.BadParameter(
            f"{value!r} is neither an ISO date/time (2026-11-02, 2026-11-02T08:00) nor an age (30m, 24h, 7d)"
        ) from None
    return (moment if moment.tzinfo else moment.replace(tzinfo=UTC)).timestamp()


def _filter(
    since: str | None, until: str | None, min_reward: float | None, split: str | None, limit: int | None
) -> TrajectoryFilter:
    from memory import TrajectoryFilter

    try:
        return TrajectoryFilter(
            since=None if since is None else parse_time(since),
            until=None if until is None else parse_time(until),
            min_reward=min_reward, split=split, limit=limit,
        )  # fmt: skip
    except ValueError as error:
        raise typer.BadParameter(str(error)) from None


@app.command("list")
def list_(
    ctx: typer.Context,
    since: Since = None,
    until: Until = None,
    min_reward: MinReward = None,
    split: Split = None,
    limit: Annotated[int, typer.Option("--limit", min=1, help="How many, newest first.")] = 20,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON array.")] = False,
) -> None:
    """The newest executor episodes: time, task, reward, split, calls and tokens."""
    where = _filter(since, until, min_reward, split, limit)
    with open_store(ctx) as store:
        found = store.trajectories.summaries(
            since=where.since,
            until=where.until,
            min_reward=where.min_reward,
            split=where.split,
            limit=where.limit,
        )
    if as_json:
        typer.echo(json.dumps([
            {"id": s.episode.id, "time": iso(s.episode.created_at), "task": s.episode.task, "status": s.episode.status,
             "reward": s.episode.reward, "reward_source": s.episode.reward_source, "split": s.episode.split,
             "group_id": s.episode.group_id, "calls": s.calls, "tokens": s.tokens, "sampled_tokens": s.sampled_tokens,
             "contains_secret": s.episode.contains_secret}
            for s in found
        ], ensure_ascii=False))  # fmt: skip
        return
    if not found:
        typer.echo("no executor episodes")
        return
    typer.echo(
        f"{'id':>6}  {'time (UTC)':<16}  {'reward':>6}  {'source':<8}  {'split':<7}  {'calls':>5}  {'tokens':>7}  task"
    )
    for s in found:
        episode = s.episode
        reward = "-" if episode.reward is None else f"{episode.reward:.2f}"
        task = " ".join(episode.task.split())
        task = task if len(task) <= 60 else task[:59] + "…"
        mark = "  [secret: not exported]" if episode.contains_secret else ""
        typer.echo(
            f"{episode.id:>6}  {iso(episode.created_at)[:16].replace('T', ' '):<16}  {reward:>6}  "
            f"{episode.reward_source or '-':<8}  {episode.split or '-':<7}  {s.calls:>5}  {s.tokens:>7}  {task}{mark}"
        )


@app.command()
def show(
    ctx: typer.Context,
    episode_id: Annotated[int, typer.Argument(help="The episode id (see `temper trajectories list`).")],
    tokenizer: Annotated[
        Path | None,
        typer.Option(
            "--tokenizer",
            help="A tokenizer directory to decode ids with (default: the call's model directory, if it is one).",
            file_okay=False,
        ),
    ] = None,
) -> None:
    """One episode and each of its model calls, with the text of what was added and sampled."""
    from memory import UnknownRecordError

    with open_store(ctx) as store:
        try:
            episode = store.trajectories.executor_episode(episode_id)
        except UnknownRecordError as error:
            typer.echo(f"temper: {error}", err=True)
            raise typer.Exit(1) from None
        calls = store.trajectories.calls(episode_id)
    reward = (
        "none yet"
        if episode.reward is None
        else f"{episode.reward:.2f} ({episode.reward_source}: {episode.reward_reason or '-'})"
    )
    typer.echo(f"episode {episode.id} [{episode.kind}, {episode.status}] {iso(episode.created_at)}")
    typer.echo(f"task: {episode.task}")
    typer.echo(f"reward: {reward}")
    typer.echo(
        f"split: {episode.split or '-'}  group: {episode.group_id or '-'}  sandbox: {episode.sandbox_backend or '-'}"
    )
    snapshot = (
        "-"
        if episode.snapshot_id is None
        else f"{episode.snapshot_id} ({episode.snapshot_bytes or 0:,} bytes)"
    )
    typer.echo(f"snapshot: {snapshot}  verifier: {episode.verifier or '-'}")
    if episode.parse_failures is not None:
        typer.echo(f"parse failures: {episode.parse_failures}  timeouts: {episode.timeouts}")
    if episode.contains_secret:
        typer.echo(
            "secret: a call held a secret (redacted here); this episode is never exported or trained on"
        )
    decoders = _Decoders(tokenizer)
    previous: dict[str, RecordedCall] = {}
    for call in calls:
        typer.echo("")
        _show_call(call, previous.get(call.role), decoders)
        previous[call.role] = call


def _show_call(call: RecordedCall, previous: RecordedCall | None, decoders: _Decoders) -> None:
    link = "extends previous" if call.extends_previous else f"stored whole ({call.mismatch or 'first call'})"
    typer.echo(
        f"call {call.index} {call.role}  model: {call.model}  adapter: {call.adapter_version or '-'}"
        f"  tokens: {len(call.prompt_ids)} prompt + {len(call.completion_ids)} sampled"
        f"  finish: {call.finish_reason}  retokenized: {'yes' if call.retokenized else 'no'}"
        f"  {call.latency_s * 1000:.0f} ms  {link}"
    )
    decode = decoders.get(call.model)
    new_from = call.common_prefix if call.extends_previous else 0
    if decode is not None and call.prompt_ids:
        typer.echo(f"  prompt (+{len(call.prompt_ids) - new_from} tokens, decoded):")
        typer.echo(_indent(decode(call.prompt_ids[new_from:])))
        typer.echo("  completion (decoded):")
        typer.echo(_indent(decode(call.completion_ids)))
        return
    shared = (
        len(previous.messages)
        if previous is not None and call.messages[: len(previous.messages)] == previous.messages
        else 0
    )
    if call.messages[shared:]:
        typer.echo("  new messages (stored text):")
        for message in call.messages[shared:]:
            typer.echo(_indent(f"{message.get('role', '?')}: {message.get('content', '')}"))
    typer.echo("  completion (stored text):")
    typer.echo(_indent(call.text))


def _indent(text: str) -> str:
    return "\n".join("    " + line for line in (text or "").splitlines() or [""])


class _Decoders:
    """Tokenizers by call model, loaded once each: the --tokenizer directory for every call,
    else the call's model when it is a local model directory; None where neither works."""

    def __init__(self, explicit: Path | None) -> None:
        self.explicit = explicit
        self.loaded: dict[str, Any] = {}

    def get(self, model: str) -> Any:
        source = self.explicit or (Path(model) if Path(model).is_dir() else None)
        if source is None:
            return None
        key = str(source)
        if key not in self.loaded:
            self.loaded[key] = self._load(source)
        return self.loaded[key]

    def _load(self, source: Path) -> Any:
        try:
            from transformers import AutoTokenizer

            hf = AutoTokenizer.from_pretrained(str(source))
        except ImportError:
            typer.echo(
                "temper: decoding needs transformers (the `learn` extra); showing stored text", err=True
            )
            return None
        except (OSError, ValueError) as error:
            typer.echo(f"temper: no tokenizer in {source} ({error}); showing stored text", err=True)
            return None
        return lambda ids: hf.decode(ids, skip_special_tokens=False)


@app.command()
def export(
    ctx: typer.Context,
    file: Annotated[Path, typer.Argument(help="Where to write: .parquet or .jsonl.", dir_okay=False)],
    format: Annotated[
        str | None,
        typer.Option(
            "--format",
            help="jsonl, parquet (default: from FILE's suffix) or trl (trl's prompt-completion rows).",
        ),
    ] = None,
    with_tokens: Annotated[
        bool, typer.Option("--with-tokens", help="trl rows also carry token ids and logprobs.")
    ] = False,
    since: Since = None,
    until: Until = None,
    min_reward: MinReward = None,
    split: Split = None,
    limit: Annotated[
        int | None, typer.Option("--limit", min=1, help="At most this many episodes, oldest first.")
    ] = None,
) -> None:
    """One row per model call with its full prompt ids, completion ids and logprobs."""
    from connectors.redaction import configured_secrets
    from memory import export_trajectories

    by_suffix = "parquet" if file.suffix == ".parquet" else "jsonl"
    chosen = format or by_suffix
    if chosen not in ("jsonl", "parquet", "trl"):
        raise typer.BadParameter(f"--format must be jsonl or parquet (or trl), not {chosen!r}")
    container = by_suffix if chosen == "trl" else chosen
    if container == "parquet" and importlib.util.find_spec("pyarrow") is None:
        typer.echo(
            "temper: Parquet export needs pyarrow, in the `learn` extra: pip install 'temper[learn]'",
            err=True,
        )
        raise typer.Exit(2)
    where = _filter(since, until, min_reward, split, limit)
    secrets = configured_secrets(get_config(ctx))
    started = time.perf_counter()
    with open_store(ctx) as store, cannot_write_exits(file):
        if chosen == "trl":
            from connectors.trajectories_trl import export_trl

            report = export_trl(
                store, file, format=container, where=where, secrets=secrets, with_tokens=with_tokens
            )
        else:
            report = export_trajectories(store, file, format=chosen, where=where, secrets=secrets)
    seconds = time.perf_counter() - started
    layout = f"trl, {container}" if chosen == "trl" else chosen
    typer.echo(
        f"exported {report.calls} calls from {report.episodes} episodes to {file} ({layout}, {seconds:.1f} s)"
    )
    typer.echo(f"excluded {report.excluded_secret} episodes that contain secrets")
