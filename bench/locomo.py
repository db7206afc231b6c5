"""LoCoMo-format conversations as temper messages and labelled questions (for bench/recall.py).

The layout (Maharana et al., ACL 2024): a JSON list of samples, each with
`conversation` (`speaker_a`, `speaker_b`, `session_N`: turns with `speaker`, `dia_id`, `text`;
`session_N_date_time`: "1:56 pm on 8 May, 2023") and `qa` (`question`, `evidence`: the
`dia_id`s of the turns that hold the answer, `category`: 1 multi-hop, 2 temporal,
3 open-domain, 4 single-hop, 5 adversarial).

How a conversation becomes temper's memory:
- one temper user per sample (handle = `sample_id`): both speakers are that user's
  conversation, the way one person's chats with the agent are, and every question of the
  sample is asked as that user;
- one session per `session_N` (key `<sample_id>/session_N`);
- each turn one message, role `user`, content `"<speaker>: <text>"` (a transcript line: the
  name is how the questions refer to who said it), timestamp the session's date and time
  plus 30 s per turn, external id `<sample_id>:<dia_id>`. Image captions (`blip_caption`)
  are left out: a chat store holds what was typed.

Questions of category 5 (adversarial: unanswerable by design) are skipped. Evidence ids are
read leniently ("D8:6; D9:17", "D:11:26"); ids naming no turn are dropped. A question left
with none stays in (it counts as a miss in every mode, so the totals match the data set's
question count) and is counted on a line of its own.
"""

import json
import re
from datetime import UTC, datetime
from pathlib import Path

from memory import NewMessage

CATEGORIES = (1, 2, 3, 4)
TURN_SECONDS = 30
_DATE_FORMAT = "%I:%M %p on %d %B, %Y"
_EVIDENCE = re.compile(r"D:?(\d+):(\d+)")


def load_locomo(path: Path) -> tuple[list[NewMessage], list[dict]]:
    """The messages of every sample, and its questions as bench/recall.py asks them:
    `{"question", "user", "answer_ids", "kind"}` (kind: the category as text)."""
    samples = json.loads(Path(path).read_text())
    messages: list[NewMessage] = []
    questions: list[dict] = []
    skipped = 0  # questions whose evidence names no turn
    for sample in samples:
        user = str(sample["sample_id"])
        turns = _messages(user, sample["conversation"])
        messages += turns
        known = {m.external_id for m in turns}
        for qa in sample["qa"]:
            if qa.get("category") not in CATEGORIES:
                continue
            evidence = [
                f"{user}:D{session}:{turn}"
                for session, turn in _EVIDENCE.findall(" ".join(map(str, qa.get("evidence", []))))
            ]
            answers = [e for e in dict.fromkeys(evidence) if e in known]
            skipped += not answers
            questions.append(
                {"question": qa["question"], "user": user, "answer_ids": answers, "kind": str(qa["category"])}
            )
    if skipped:
        print(f"questions_without_known_evidence: {skipped}")
    return messages, questions


def _messages(user: str, conversation: dict) -> list[NewMessage]:
    messages = []
    number = 1
    while f"session_{number}" in conversation:
        started = datetime.strptime(conversation[f"session_{number}_date_time"], _DATE_FORMAT)
        base = started.replace(tzinfo=UTC).timestamp()
        for position, turn in enumerate(conversation[f"session_{number}"]):
            messages.append(
                NewMessage(
                    session=f"{user}/session_{number}",
                    user=user,
                    role="user",
                    content=f"{turn['speaker']}: {turn['text']}",
                    ts=base + TURN_SECONDS * position,
                    external_id=f"{user}:{turn['dia_id']}",
                )
            )
        number += 1
    return messages
