"""Memory benchmark: ingest rate, query latency and disk use at N messages.

Prints one `name: value` line per figure. The baseline is a bare FTS5 table (text stored
inside the index, plain `ORDER BY rank`) built from the same corpus in the same run, so the
ratios hold on a noisy machine. Medians are printed next to the baseline's
(`query_<kind>_p50_ms_vs_baseline: OURS vs BARE`, and their ratio) so the fixed cost a staged
query pays on every search stays visible, not only the tail it saves.

Targets (docs/memory.md, at 1M messages): ingest >= 30,000 messages/s, disk <= 2x the raw
text, queries p50 <= 3 ms and p99 <= 30 ms.

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
from pathlib import Path

import apsw

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from memory import MemoryStore, NewMessage

SYLLABLES = "ka lo mi ne ru sa ti vo pe da gri ston ble mar en ing ed er tho qua".split()


def vocabulary(rng: random.Random, size: int) -> list[str]:
    words: set[str] = set()
    while len(words) < size:
        words.add("".join(rng.choice(SYLLABLES) for _ in range(rng.randint(1, 4))))
    return sorted(words, key=lambda w: rng.random())


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


def percentiles(samples: list[float]) -> tuple[float, float, float]:
    ordered = sorted(samples)
    pick = lambda q: ordered[min(len(ordered) - 1, int(q * len(ordered)))]  # noqa: E731
    return statistics.median(ordered), pick(0.95), pick(0.99)


def timed(run, queries: list[str]) -> list[float]:
    for query in queries[:20]:  # warm the page cache as a running daemon would have it
        run(query)
    times = []
    for query in queries:
        started = time.perf_counter()
        run(query)
        times.append((time.perf_counter() - started) * 1000)
    return times


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

    typical = [" ".join(rng.sample(vocab[100:5_000], rng.randint(2, 3))) for _ in range(args.queries)]
    common = [" ".join(rng.sample(vocab[:30], rng.randint(2, 3))) for _ in range(args.queries)]
    users = [f"user{rng.randrange(args.users)}" for _ in range(args.queries)]
    ours = {
        "typical": timed(lambda q: store.search(q, all_users=True), typical),
        "common": timed(lambda q: store.search(q, all_users=True), common),
        "typical_one_user": timed(lambda q: store.search(q, user=users[hash(q) % len(users)]), typical),
        "common_one_user": timed(lambda q: store.search(q, user=users[hash(q) % len(users)]), common),
    }
    store.close()

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
    baseline_sql = "select rowid, bm25(bare) from bare where bare match ? order by rank limit 10"
    quote = lambda q: " AND ".join(f'"{w}"' for w in q.split())  # noqa: E731
    base = {
        "typical": timed(lambda q: bare.execute(baseline_sql, (quote(q),)).fetchall(), typical),
        "common": timed(lambda q: bare.execute(baseline_sql, (quote(q),)).fetchall(), common),
    }
    print(f"baseline_ingest_messages_per_s: {args.messages / bare_ingest:.0f}")
    print(f"baseline_disk_bytes_per_message: {bare_disk / args.messages:.1f}")
    print(f"ingest_ratio_vs_baseline: {bare_ingest / ingest:.2f}")

    for kind, samples in ours.items():
        p50, p95, p99 = percentiles(samples)
        print(f"query_{kind}_p50_ms: {p50:.2f}")
        print(f"query_{kind}_p95_ms: {p95:.2f}")
        print(f"query_{kind}_p99_ms: {p99:.2f}")
    for kind, samples in base.items():
        p50, p95, p99 = percentiles(samples)
        print(f"baseline_query_{kind}_p50_ms: {p50:.2f}")
        print(f"baseline_query_{kind}_p99_ms: {p99:.2f}")
        print(f"query_{kind}_p99_ratio_vs_baseline: {percentiles(ours[kind])[2] / p99:.2f}")
        ours_p50 = percentiles(ours[kind])[0]
        print(f"query_{kind}_p50_ms_vs_baseline: {ours_p50:.2f} vs {p50:.2f}")
        print(f"query_{kind}_p50_ratio_vs_baseline: {ours_p50 / p50:.2f}")


if __name__ == "__main__":
    main()
