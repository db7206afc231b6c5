"""The model_calls table (migration 6): one executor model call at token level, stored against
the previous call of its role in the same episode.

Token ids and logprobs are packed little-endian int32 / float32 BLOBs (token_arrays.py). Each
call is linked to the previous call of the same role in the same episode. When its prompt
starts with that call's prompt + completion (the usual case in a multi-turn episode), the row
stores only the appended tokens (`prompt_shared` tokens come from the previous sequence,
`prompt_suffix` holds the rest). Otherwise the row records why it did not extend (`mismatch`,
one of MISMATCH_CAUSES) and where the two part (`common_prefix`), and still stores the prefix
they share only once: chat backends re-encode the previous reply's text, so a real episode
often parts inside the last completion (measured with the tiny local model: 9 of 9 follow-up
calls), and storing each such prompt whole would make an episode's size grow with the square
of its turns. After a tokenizer or chat-template change nothing is shared: the same ids mean
other text. Messages are shared the same way, message by message.

Invariants:
- `read` gives back each call's prompt_ids, completion_ids and logprobs exactly (logprobs
  rounded to float32);
- an episode whose calls all extend each other stores 4 bytes per token of its final sequence
  plus 4 per sampled token (the logprob): at most 8 bytes per token; one whose calls part
  inside the previous completion stores the re-encoded tail of that completion again;
- a call's text and messages are redacted before they are stored; when redaction found
  anything, the episode is marked `contains_secret`, since its token ids cannot be redacted;
- `TrajectoryLog` only caches the last sequence per (episode, role) and checks it against the
  database before trusting it.
"""

import hashlib
import json
from array import array
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import apsw

from . import token_arrays
from .errors import UnknownRecordError
from .secrets import Redactor
from .trajectory_records import CALL_ROLES, RecordedCall, StoredCall

CACHED_TAILS = 64

_CALL_FIELDS = (
    "episode_id, call_index, role, model, adapter_version, tokenizer_hash, chat_template_hash,"
    " sampling, previous_call_id, prompt_shared, prompt_suffix, completion_ids, completion_logprobs,"
    " extends_previous, mismatch, common_prefix, messages_shared, messages, text, finish_reason,"
    " retokenized, latency_s, created_at"
)
_CALL_COLUMNS = "id, " + _CALL_FIELDS
_INSERT_CALL = (
    f"insert into model_calls({_CALL_FIELDS}) values ({', '.join('?' * len(_CALL_FIELDS.split(',')))})"
)


@dataclass(frozen=True)
class Tail:
    """What the next call of a role is compared with: the last call's full sequence and messages."""

    call_id: int
    prompt_len: int
    sequence: array  # prompt + completion ids
    messages: list[str]  # each message as canonical JSON, redacted
    tokenizer_hash: str | None
    chat_template_hash: str | None
    retokenized: bool
    # Digests of the messages as given, before redaction: messages the next call repeats are
    # not redacted again. Empty for a tail rebuilt from rows (everything is redacted then).
    raw_digests: tuple[bytes, ...] = ()


class TrajectoryLog:
    """A store's trajectory state: the redactor for configured secrets, and a small cache of
    the last sequence per (episode, role) so recording a call does not re-read its history."""

    def __init__(self, secrets: tuple[str, ...] = ()) -> None:
        self.redactor = Redactor.for_secrets(secrets)
        self._tails: OrderedDict[tuple[int, str], Tail] = OrderedDict()

    def remember(self, episode_id: int, role: str, tail: Tail) -> None:
        self._tails[(episode_id, role)] = tail
        self._tails.move_to_end((episode_id, role))
        while len(self._tails) > CACHED_TAILS:
            self._tails.popitem(last=False)

    def cached(self, episode_id: int, role: str, call_id: int) -> Tail | None:
        tail = self._tails.get((episode_id, role))
        return tail if tail is not None and tail.call_id == call_id else None


# --- writing ---------------------------------------------------------------------------------


def record_call(
    db: apsw.Connection, log: TrajectoryLog, episode_id: int, call: StoredCall, now: float
) -> tuple[int, Tail]:
    """Insert one call; return its id and the tail the next call of its role extends."""
    _check_call(call)
    if db.execute("select 1 from episodes where id = ?", (episode_id,)).fetchone() is None:
        raise UnknownRecordError(f"no episode with id {episode_id}")
    index, previous = _previous(db, log, episode_id, call.role)
    redaction = log.redactor.text(call.text)
    text = redaction.text
    canonical, digests, found_in_messages = _redact_messages(log.redactor, call.messages, previous)
    if redaction.found or found_in_messages:
        db.execute("update episodes set contains_secret = 1 where id = ?", (episode_id,))
    prompt = token_arrays.ids(call.prompt_ids)
    completion = token_arrays.ids(call.completion_ids)
    link = _link(previous, prompt, call)
    messages_shared = 0 if previous is None else _leading_equal(canonical, previous.messages)
    db.execute(
        _INSERT_CALL,
        (
            episode_id, index, call.role, call.model, call.adapter_version, call.tokenizer_hash,
            call.chat_template_hash, json.dumps(call.sampling, sort_keys=True),
            None if previous is None else previous.call_id, link.prompt_shared,
            token_arrays.pack(prompt[link.prompt_shared :]), token_arrays.pack(completion),
            token_arrays.pack(token_arrays.floats(call.completion_logprobs)),
            int(link.extends), link.mismatch, link.common_prefix,
            messages_shared, "[" + ",".join(canonical[messages_shared:]) + "]", text,
            call.finish_reason, int(call.retokenized), call.latency_s, now,
        ),
    )  # fmt: skip
    call_id = db.last_insert_rowid()
    tail = Tail(call_id, len(prompt), prompt + completion, canonical, call.tokenizer_hash,
                call.chat_template_hash, call.retokenized, digests)  # fmt: skip
    return call_id, tail


def _check_call(call: StoredCall) -> None:
    if call.role not in CALL_ROLES:
        raise ValueError(f"call role must be one of {', '.join(CALL_ROLES)}; got {call.role!r}")
    if call.completion_logprobs and len(call.completion_logprobs) != len(call.completion_ids):
        raise ValueError(
            f"completion_logprobs must be empty or one per completion id: got"
            f" {len(call.completion_logprobs)} for {len(call.completion_ids)} ids"
        )


def _canonical(message: Any) -> str:
    return json.dumps(message, ensure_ascii=False, separators=(",", ":"))


def _redact_messages(
    redactor: Redactor, messages: list[dict[str, Any]], previous: Tail | None
) -> tuple[list[str], tuple[bytes, ...], set[str]]:
    """The messages redacted (canonical JSON), digests of them as given, and the kinds found.

    Leading messages the previous call was given as well are taken from it, already redacted:
    redaction is the costliest step of a call, and the history grows with every turn.
    """
    digests = tuple(hashlib.blake2b(_canonical(m).encode(), digest_size=16).digest() for m in messages)
    reused = 0 if previous is None else _leading_equal(digests, previous.raw_digests)
    redacted = [] if previous is None else previous.messages[:reused]
    found: set[str] = set()
    for message in messages[reused:]:
        clean, kinds = redactor.value(message)
        redacted.append(_canonical(clean))
        found |= kinds
    return redacted, digests, found


def _leading_equal(a: Sequence[object], b: Sequence[object]) -> int:
    count = 0
    for left, right in zip(a, b):
        if left != right:
            break
        count += 1
    return count


def _previous(db: apsw.Connection, log: TrajectoryLog, episode_id: int, role: str) -> tuple[int, Tail | None]:
    """The index the new call gets, and the tail of the episode's last call of `role`."""
    index = db.execute(
        "select coalesce(max(call_index) + 1, 0) from model_calls where episode_id = ?", (episode_id,)
    ).fetchone()[0]
    row = db.execute(
        "select id from model_calls where episode_id = ? and role = ? order by call_index desc limit 1",
        (episode_id, role),
    ).fetchone()
    if row is None:
        return index, None
    tail = log.cached(episode_id, role, row[0])
    if tail is None:  # written by another process, or evicted: rebuild from the rows
        tail = read(db, episode_id, until_call_id=row[0])[1][row[0]]
    return index, tail


@dataclass(frozen=True)
class _Link:
    prompt_shared: int
    extends: bool
    mismatch: str | None
    common_prefix: int


def _link(previous: Tail | None, prompt: array, call: StoredCall) -> _Link:
    """How the prompt relates to the previous sequence; the cause when it does not extend it."""
    if previous is None:
        return _Link(0, False, None, 0)
    sequence = previous.sequence
    common = token_arrays.common_prefix(prompt, sequence)
    # Ids from another tokenizer or template mean other text, even where they happen to match.
    same_tokens = (previous.tokenizer_hash, previous.chat_template_hash) == (
        call.tokenizer_hash,
        call.chat_template_hash,
    )
    if sequence and common == len(sequence) and same_tokens:
        return _Link(common, True, None, common)
    shared = common if same_tokens else 0  # the prefix both still have is stored once either way
    if not sequence:
        cause = "no_ids"
    elif not same_tokens:
        cause = "tokenizer_changed"
    elif previous.retokenized or call.retokenized:
        cause = "retokenized"
    elif common == len(prompt):
        cause = "shorter"
    elif common < previous.prompt_len:
        cause = "prompt_diverged"
    else:
        cause = "completion_diverged"
    return _Link(shared, False, cause, common)


# --- reading ---------------------------------------------------------------------------------


def read(
    db: apsw.Connection, episode_id: int, until_call_id: int | None = None
) -> tuple[list[RecordedCall], dict[int, Tail]]:
    """The episode's calls (up to `until_call_id`) rebuilt in order, and each one's tail."""
    bound = (
        ""
        if until_call_id is None
        else " and call_index <= (select call_index from model_calls where id = ?)"
    )
    rows = db.execute(
        f"select {_CALL_COLUMNS} from model_calls where episode_id = ?{bound} order by call_index",
        (episode_id,) if until_call_id is None else (episode_id, until_call_id),
    ).fetchall()
    tails: dict[int, Tail] = {}
    full_messages: dict[int, list[Any]] = {}
    recorded = []
    for row in rows:
        (call_id, _, index, role, model, adapter, tokenizer_hash, template_hash, sampling, previous_id,
         prompt_shared, suffix, completion_blob, logprob_blob, extends, mismatch, common, messages_shared,
         messages_json, text, finish_reason, retokenized, latency_s, created_at) = row  # fmt: skip
        prompt = token_arrays.unpack(suffix, token_arrays.IDS)
        messages = json.loads(messages_json)
        canonical = [_canonical(message) for message in messages]
        previous = tails.get(previous_id) if previous_id is not None else None
        if previous is not None:
            prompt = previous.sequence[:prompt_shared] + prompt
            canonical = previous.messages[:messages_shared] + canonical
            messages = full_messages[previous_id][:messages_shared] + messages
        completion = token_arrays.unpack(completion_blob, token_arrays.IDS)
        tails[call_id] = Tail(call_id, len(prompt), prompt + completion, canonical, tokenizer_hash,
                              template_hash, bool(retokenized))  # fmt: skip
        full_messages[call_id] = messages
        recorded.append(
            RecordedCall(
                id=call_id, episode_id=episode_id, index=index, role=role, model=model,
                prompt_ids=prompt.tolist(), completion_ids=completion.tolist(),
                completion_logprobs=token_arrays.unpack(logprob_blob, token_arrays.FLOATS).tolist(),
                finish_reason=finish_reason, text=text, messages=messages,
                adapter_version=adapter, retokenized=bool(retokenized), tokenizer_hash=tokenizer_hash,
                chat_template_hash=template_hash, latency_s=latency_s, sampling=json.loads(sampling),
                extends_previous=bool(extends), mismatch=mismatch, common_prefix=common, created_at=created_at,
            )
        )  # fmt: skip
    return recorded, tails
