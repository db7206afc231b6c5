"""Memory benchmark: ingest rate, query latency, top-10 hit rate and disk use at N messages.

Prints one `name: value` line per figure. Two baselines are built from the same corpus in the
same run, so the ratios hold on a noisy machine:

- **peer**: the peer's session store (Hermes Agent's state.db schema and its `search_messages`
  query as it runs them; see memory_peer.py), the store temper is compared with;
- **bare FTS5**: one FTS5 table with the text inside the index, plain `ORDER BY rank`, no join,
  no snippet: the floor any SQLite store pays.

Every query is made from a known target message (2-3 of its words: mid-frequency words for
`typical`, the 30 most frequent for `common`), so each store's top-10 hit rate (the share of
queries whose target is in its first 10 hits) is printed next to its latency. For each kind:
`query_<kind>_{p50,p90,p99}_ms` (temper), `peer_query_...`, `baseline_query_...`,
`query_<kind>_hit_rate_at_10` (and `peer_`, `baseline_`), the ratios to the peer at each
percentile, and the median beside bare FTS5's (`query_<kind>_p50_ms_vs_baseline`), so the
fixed cost every search pays stays visible, not only the tail it saves.

Targets (docs/memory.md, at 1M messages): ingest >= 30,000 messages/s, disk <= 2x the raw
text, queries p50 <= 3 ms and p99 <= 30 ms, and at or below the peer at every percentile
with the same or a better hit rate.

    python bench/memory.py --messages 1000000
"""

import argparse
import itertools
import os
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import apsw

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench.memory_peer import PeerStore
from memory import MemoryStore, NewMessage

SYLLABLES = "ka lo mi ne ru sa ti vo pe da gri ston ble mar en ing ed er tho qua".split()
PERCENTILES = (0.5, 0.9, 0.99)


def vocabulary(rng: random.Random, size: int) -> list[str]:
    words: set[str] = set()
    while len(words) < size:
        words.add("".join(rng.choice(SYLLABLES) for _ in range(rng.randint(1, 4))))
    return sorted(sorted(words), key=lambda w: rng.random())  # sorted first: set order varies by run


def corpus(rng: random.Random, n: int, vocab: list[str], users: int, sessions: int) -> list[NewMessage]:
    weights = list(itertools.accumulate(1 / (rank + 1) ** 1.07 for rank in range(len(vocab))))
    start = time.time() - 365 * 86_400
    messages = []
    for i in range(n):
        text = " ".join(rng.choices(vocab, cum_weights=weights, k=rng.randint(10, 60)))
        session = rng.randrange(sessions)
        messages.append(
            NewMessage(
                session=f"s{session}",
                user=f"user{session % users}",
                role="user" if i % 2 == 0 else "assistant",
                content=text,
                ts=start + i * (365 * 86_400 / n),
                external_id=f"m{i}",
            )
        )
    return messages


def targeted_queries(
    rng: random.Random, messages: list[NewMessage], rank: dict[str, int], ranks: range, n: int, user: bool
) -> list[tuple[str, int, str | None]]:
    """(query, index of its target message, the target's user if `user`): 2-3 distinct words
    of the target whose frequency rank is in `ranks`."""
    queries: list[tuple[str, int, str | None]] = []
    while len(queries) < n:
        target = rng.randrange(len(messages))
        words = [w for w in dict.fromkeys(messages[target].content.split()) if rank[w] in ranks]
        if len(words) >= 2:
            picked = rng.sample(words, min(len(words), rng.randint(2, 3)))
            queries.append((" ".join(picked), target, messages[target].user if user else None))
    return queries


def percentiles(samples: list[float]) -> list[float]:
    ordered = sorted(samples)
    return [
        statistics.median(ordered) if q == 0.5 else ordered[min(len(ordered) - 1, int(q * len(ordered)))]
        for q in PERCENTILES
    ]


Search = Callable[[str, str | None], list[int]]


def timed(
    stores: dict[str, Search], queries: list[tuple[str, int, str | None]]
) -> dict[str, tuple[list[float], float]]:
    """Per store: milliseconds per query, and the share of queries whose target is in its top 10.
    The stores take turns on each query (in a rotating order), so a burst of load from another
    process on this shared machine lands on all of them alike."""
    for query, _, user in queries[:20]:  # warm the page cache as a running daemon would have it
        for run in stores.values():
            run(query, user)
    times: dict[str, list[float]] = {name: [] for name in stores}
    hits = dict.fromkeys(stores, 0)
    names = list(stores)
    for turn, (query, target, user) in enumerate(queries):
        for name in names[turn % len(names) :] + names[: turn % len(names)]:
            started = time.perf_counter()
            found = stores[name](query, user)
            times[name].append((time.perf_counter() - started) * 1000)
            hits[name] += target in found[:10]
    return {name: (times[name], hits[name] / len(queries)) for name in stores}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=500)
    parser.add_argument("--users", type=int, default=1_000)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--dir", type=Path, default=None, help="where the databases go (default: a temp dir)")
    args = parser.parse_args()
    rng = random.Random(args.seed)
    vocab = vocabulary(rng, 50_000)
    messages = corpus(rng, args.messages, vocab, args.users, sessions=args.messages // 20 + 1)
    raw_bytes = sum(len(m.content.encode()) for m in messages)
    workdir = Path(args.dir or tempfile.mkdtemp(prefix="temper-bench-"))
    print(f"messages: {args.messages}")
    print(f"raw_text_bytes_per_message: {raw_bytes / args.messages:.1f}")

    rank = {word: i for i, word in enumerate(vocab)}
    kinds = {
        "typical": targeted_queries(rng, messages, rank, range(100, 5_000), args.queries, user=False),
        "common": targeted_queries(rng, messages, rank, range(30), args.queries, user=False),
        "typical_one_user": targeted_queries(rng, messages, rank, range(100, 5_000), args.queries, user=True),
        "common_one_user": targeted_queries(rng, messages, rank, range(30), args.queries, user=True),
    }
    all_users = ("typical", "common")

    # --- temper's store -------------------------------------------------------------
    store = MemoryStore.open(workdir / "temper.db")
    started = time.perf_counter()
    for i in range(0, len(messages), 10_000):
        store.add_messages(messages[i : i + 10_000])
    ingest = time.perf_counter() - started
    print(f"ingest_messages_per_s: {args.messages / ingest:.0f}")
    timings = store.maintain()
    print(f"maintenance_s: {sum(timings.values()):.1f}")
    stats = store.stats()
    disk = stats.database_bytes + stats.wal_bytes
    print(f"disk_bytes_per_message: {disk / args.messages:.1f}")
    print(f"disk_to_raw_text_ratio: {disk / raw_bytes:.2f}")

    def ours(query: str, user: str | None) -> list[int]:
        hits = store.search(query, user=user, all_users=user is None)
        return [int(hit.external_id[1:]) for hit in hits if hit.external_id]

    # --- the peer's store ------------------------------------------------------------
    peer = PeerStore(workdir / "peer.db")
    started = time.perf_counter()
    for i in range(0, len(messages), 10_000):
        batch = messages[i : i + 10_000]
        peer.add(
            [(m.session, m.user, m.ts) for m in batch],
            [(m.session, m.role, m.content, m.ts) for m in batch],
        )
    peer_ingest = time.perf_counter() - started
    peer.optimize()
    peer_disk = os.path.getsize(workdir / "peer.db")
    print(f"peer_ingest_messages_per_s: {args.messages / peer_ingest:.0f}")
    print(f"peer_disk_bytes_per_message: {peer_disk / args.messages:.1f}")

    # --- baseline: a bare FTS5 table, ranked by bm25 -----------------------------------------
    bare = apsw.Connection(str(workdir / "bare.db"))
    for pragma in ("pragma journal_mode=wal", "pragma synchronous=normal"):
        bare.execute(pragma).fetchall()
    bare.execute(
        "create virtual table bare using fts5(content, tokenize='porter unicode61 remove_diacritics 2')"
    )
    started = time.perf_counter()
    for i in range(0, len(messages), 10_000):
        with bare:
            bare.executemany(
                "insert into bare(content) values (?)", [(m.content,) for m in messages[i : i + 10_000]]
            )
    bare_ingest = time.perf_counter() - started
    bare.execute("insert into bare(bare) values ('optimize')")
    bare.execute("pragma wal_checkpoint(truncate)").fetchall()
    bare_disk = os.path.getsize(workdir / "bare.db")
    baseline_sql = "select rowid from bare where bare match ? order by rank limit 10"

    def bare_search(query: str, _: str | None) -> list[int]:
        expression = " AND ".join(f'"{w}"' for w in query.split())
        return [row[0] - 1 for row in bare.execute(baseline_sql, (expression,))]

    print(f"baseline_ingest_messages_per_s: {args.messages / bare_ingest:.0f}")
    print(f"baseline_disk_bytes_per_message: {bare_disk / args.messages:.1f}")
    print(f"ingest_ratio_vs_baseline: {bare_ingest / ingest:.2f}")
    print(f"ingest_ratio_vs_peer: {peer_ingest / ingest:.2f}")

    def peer_search(query: str, _: str | None) -> list[int]:
        return [row["id"] - 1 for row in peer.search(query)]

    results: dict[str, dict[str, tuple[list[float], float]]] = {"ours": {}, "peer": {}, "baseline": {}}
    for kind, queries in kinds.items():
        stores: dict[str, Search] = {"ours": ours}
        if kind in all_users:
            stores |= {"peer": peer_search, "baseline": bare_search}
        for name, measured in timed(stores, queries).items():
            results[name][kind] = measured
    store.close()

    for kind in kinds:
        figures = {
            name: percentiles(by_kind[kind][0]) for name, by_kind in results.items() if kind in by_kind
        }
        for name, prefix in (("ours", ""), ("peer", "peer_"), ("baseline", "baseline_")):
            if name in figures:
                for q, value in zip(PERCENTILES, figures[name]):
                    print(f"{prefix}query_{kind}_p{round(q * 100)}_ms: {value:.2f}")
                print(f"{prefix}query_{kind}_hit_rate_at_10: {results[name][kind][1]:.3f}")
        for name in ("peer", "baseline"):
            if name in figures:
                for q, value, other in zip(PERCENTILES, figures["ours"], figures[name]):
                    print(f"query_{kind}_p{round(q * 100)}_ratio_vs_{name}: {value / other:.2f}")
        if "baseline" in figures:
            print(
                f"query_{kind}_p50_ms_vs_baseline: {figures['ours'][0]:.2f} vs {figures['baseline'][0]:.2f}"
            )


if __name__ == "__main__":
    main()
