"""The records of executor episodes and their model calls, as memory/ stores and returns them.

memory/ does not import runtime/, so a call is described here on its own terms. Its fields
carry the names of runtime.executor.Completion's, so a recorder builds one with
`StoredCall(role=..., messages=..., text=c.text, prompt_ids=c.prompt_ids, ...,
sampling=c.sampling.as_dict())`.

    StoredCall        one model call as the runtime hands it over (what round-trips)
    RecordedCall      a StoredCall read back, with where it sits and how it was stored
    ExecutorEpisode   an episode row with the executor columns (kind, split, group, sandbox,
                      snapshot, verifier, secret mark)
    Trajectory        an episode and its calls: one unit of training data
    TrajectorySummary an episode with its call and token counts (for listings)
    TrajectoryFilter  which episodes a listing, iteration or export covers
"""

from dataclasses import dataclass, field
from typing import Any

CALL_ROLES = ("executor", "planner", "judge")
SPLITS = ("train", "heldout", "live")
KINDS = ("chat", "executor")

# Why a call's prompt did not extend the previous call's prompt + completion (same episode,
# same role). The learner starts a new training row at each and wants the counts by cause.
MISMATCH_CAUSES = (
    "tokenizer_changed",  # tokenizer or chat-template hash differs from the previous call's
    "retokenized",  # this call or the previous one has re-encoded ids, not sampled ones
    "no_ids",  # the previous call has no token ids (planner stand-in)
    "shorter",  # the prompt is a strict prefix of the previous sequence (truncated context)
    "prompt_diverged",  # the prompt differs inside the previous prompt (history rewritten)
    "completion_diverged",  # it differs inside the previous completion (sampled ids re-encoded)
)


@dataclass(frozen=True, kw_only=True)
class StoredCall:
    """One model call, exactly as the model saw and produced it.

    `completion_logprobs` is empty (no logprobs from the backend) or one per completion id.
    `messages` is the chat the call was given (OpenAI format), optional but wanted: its text
    is what secret detection sees of the prompt, and what `temper trajectories show` prints
    without a tokenizer. Texts are stored redacted (memory/secrets.py); ids as given.
    """

    role: str
    model: str
    prompt_ids: list[int]
    completion_ids: list[int]
    completion_logprobs: list[float]
    finish_reason: str
    text: str = ""
    messages: list[dict[str, Any]] = field(default_factory=list)
    adapter_version: str | None = None
    retokenized: bool = False
    tokenizer_hash: str | None = None
    chat_template_hash: str | None = None
    latency_s: float = 0.0
    sampling: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, kw_only=True)
class RecordedCall(StoredCall):
    """A stored call read back: prompt_ids reconstructed in full, texts as stored (redacted).

    `extends_previous`: this prompt starts with the previous call's prompt + completion (same
    episode and role, same tokenizer and chat template); the learner can then continue one
    training row. Otherwise `mismatch` names the cause (None for the first call of its role)
    and `common_prefix` how many leading tokens the prompt shares with the previous sequence.
    """

    id: int
    episode_id: int
    index: int
    extends_previous: bool
    mismatch: str | None
    common_prefix: int
    created_at: float


@dataclass(frozen=True)
class ExecutorEpisode:
    """An episode row, executor columns included (chat episodes have them empty).

    `task` is the query the executor was given; with `snapshot_id` (a content-addressed
    workspace tarball under the data dir, `snapshot_bytes` long) and `verifier` it makes the
    episode replayable. `contains_secret`: some call text held a secret, so the episode's
    token ids may too; it never enters training data or exports.
    """

    id: int
    kind: str
    task: str
    status: str
    reward: float | None
    reward_source: str | None
    reward_reason: str | None
    split: str | None
    group_id: str | None
    sandbox_backend: str | None
    snapshot_id: str | None
    snapshot_bytes: int | None
    verifier: str | None
    parent_episode_id: int | None
    session_id: int | None
    user_id: int | None
    contains_secret: bool
    created_at: float
    finished_at: float | None
    parse_failures: int | None = None  # replies that were not a valid action; None: not recorded
    timeouts: int | None = None  # commands cut at their timeout


@dataclass(frozen=True)
class Trajectory:
    episode: ExecutorEpisode
    calls: list[RecordedCall]


@dataclass(frozen=True)
class TrajectorySummary:
    """`tokens`: the tokens stored for the episode (new prompt tokens + completions), which for
    an episode whose calls all extend each other is the length of its final sequence."""

    episode: ExecutorEpisode
    calls: int
    tokens: int
    sampled_tokens: int


@dataclass(frozen=True)
class TrajectoryFilter:
    """Executor episodes created in [since, until) (Unix seconds), with reward >= min_reward
    (episodes without a reward fail a min_reward), in `split`; at most `limit`, oldest first."""

    since: float | None = None
    until: float | None = None
    min_reward: float | None = None
    split: str | None = None
    limit: int | None = None

    def __post_init__(self) -> None:
        if self.split is not None and self.split not in SPLITS:
            raise ValueError(f"split must be one of {', '.join(SPLITS)}; got {self.split!r}")
        if self.limit is not None and self.limit < 0:
            raise ValueError(f"limit must be at least 0; got {self.limit}")
