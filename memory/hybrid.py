"""Hybrid search: BM25 hits and sentence-embedding neighbours fused by reciprocal rank.

The fusion must not let the embedding's distractors push out what the lexical search was
sure of (plain RRF with k=60 did: on LoCoMo it ranked below lexical alone at every k). So:
- the lexical search's first CONFIDENT hits stay first, in their order (score 1 + fused);
- the rest is reciprocal-rank fusion of the lexical ranking and the neighbours (RRF_K = 20),
  equal weights: the embedding fills the places below the head, where lexical is weakest.
CONFIDENT and RRF_K were chosen on LoCoMo conversations 1-3 among CONFIDENT in {2, 3, 5, 7}
and RRF_K in {5, 20, 60} (docs/memory.md has the figures, and those of the conversations
not used to choose). all-MiniLM-L6-v2 alone finds a LoCoMo evidence turn in the top 5 for
under half of the questions, so above the fifth place it only displaced lexical's answers.

Optional (extra `embeddings`): vectors live in a sqlite-vec `vec0` table created by
`VectorIndex.open`, not by a migration, because a database must stay usable by connections
that do not load the extension. For the same reason no trigger touches the vector table:
deleted messages simply drop out of the join, and `prune()` removes their vectors.
Vectors are partitioned by user, so a user-scoped neighbour search reads one user's
vectors only. Messages are embedded by `backfill()` (maintenance, ~120 messages/s on one
core), never on the reply path.
"""

from __future__ import annotations

from dataclasses import replace

from .embedding import SentenceEmbedder, load_vec_extension
from .errors import UnknownRecordError
from .records import SearchHit
from .search import cut_snippet
from .store import MemoryStore

RRF_K = 20
CONFIDENT = 5  # lexical hits kept on top
CANDIDATES = 50


class VectorIndex:
    def __init__(self, store: MemoryStore, embedder: SentenceEmbedder) -> None:
        self.store = store
        self.embedder = embedder

    @classmethod
    def open(cls, store: MemoryStore, embedder: SentenceEmbedder) -> VectorIndex:
        load_vec_extension(store.db)
        store.db.execute(
            "create virtual table if not exists message_vectors using vec0("
            f"user_id integer partition key, embedding float[{embedder.dim}] distance_metric=cosine)"
        )
        store.db.execute(
            "create table if not exists message_vectors_progress (id integer primary key check (id = 1),"
            " last_message_id integer not null)"
        )
        return cls(store, embedder)

    def backfill(self, batch: int = 256, max_messages: int | None = None) -> int:
        """Embed messages added since the last backfill; return how many were embedded."""
        db = self.store.db
        done = 0
        while max_messages is None or done < max_messages:
            row = db.execute("select last_message_id from message_vectors_progress").fetchone()
            last = 0 if row is None else row[0]
            rows = db.execute(
                "select id, user_id, content from messages where id > ? order by id limit ?", (last, batch)
            ).fetchall()
            if not rows:
                break
            vectors = self.embedder.embed([content for _, _, content in rows])
            with db:
                db.executemany(
                    "insert into message_vectors(rowid, user_id, embedding) values (?, ?, ?)",
                    [
                        (message_id, user_id, vector)
                        for (message_id, user_id, _), vector in zip(rows, vectors)
                    ],
                )
                db.execute(
                    "insert into message_vectors_progress(id, last_message_id) values (1, ?)"
                    " on conflict(id) do update set last_message_id = excluded.last_message_id",
                    (rows[-1][0],),
                )
            done += len(rows)
        return done

    def prune(self) -> int:
        """Drop vectors of deleted messages."""
        with self.store.db as db:
            db.execute("delete from message_vectors where rowid not in (select id from messages)")
            return db.changes()

    def neighbours(self, text: str, user_id: int | None, k: int = CANDIDATES) -> list[int]:
        """Ids of the k messages closest in meaning to `text`, nearest first."""
        [vector] = self.embedder.embed([text])
        partition = " and user_id = ?" if user_id is not None else ""
        rows = self.store.db.execute(
            f"select rowid from message_vectors where embedding match ? and k = ?{partition} order by distance",
            (vector, k, *([user_id] if user_id is not None else [])),
        ).fetchall()
        return [row[0] for row in rows]

    def search(
        self, text: str, *, user: str | None = None, all_users: bool = False, limit: int = 10, **filters
    ) -> list[SearchHit]:
        """The lexical search and the neighbours, fused (see the module docstring)."""
        lexical = self.store.search(
            text, user=user, all_users=all_users, limit=max(limit, CANDIDATES), **filters
        )
        user_id = self.store.user_id(user) if user is not None else None
        if user is not None and user_id is None:
            return []
        neighbour_ids = self.neighbours(text, user_id)
        fused = fuse([hit.id for hit in lexical], neighbour_ids)
        by_id = {hit.id: hit for hit in lexical}
        hits: list[SearchHit] = []
        for message_id, score in fused:
            hit = by_id.get(message_id) or self._hit(message_id, text, filters)
            if hit is not None:
                hits.append(replace(hit, score=score))
            if len(hits) == limit:
                break
        return hits

    def _hit(self, message_id: int, text: str, filters: dict) -> SearchHit | None:
        """A hit only the vectors found; None if it was deleted or the filters exclude it."""
        try:
            message = self.store.get_message(message_id)
        except UnknownRecordError:
            return None
        if filters.get("session") not in (None, message.session) or filters.get("role") not in (
            None,
            message.role,
        ):
            return None
        if filters.get("since") is not None and message.ts < filters["since"]:
            return None
        if filters.get("until") is not None and message.ts >= filters["until"]:
            return None
        return SearchHit(**vars(message), score=0.0, snippet=cut_snippet(message.content, ""))


def fuse(lexical: list[int], neighbours: list[int]) -> list[tuple[int, float]]:
    """Both rankings as one, best first: the lexical head kept, the rest by reciprocal rank."""
    fused: dict[int, float] = {}
    for ranking in (lexical, neighbours):
        for rank, message_id in enumerate(ranking):
            fused[message_id] = fused.get(message_id, 0.0) + 1.0 / (RRF_K + rank + 1)
    head = lexical[:CONFIDENT]
    rest = sorted((m for m in fused if m not in head), key=fused.__getitem__, reverse=True)
    return [(m, 1.0 + fused[m]) for m in head] + [(m, fused[m]) for m in rest]
