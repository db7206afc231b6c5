"""Schema migrations: a numbered list of small functions, each applied once.

Each migration runs in its own transaction together with the row that records it in
`migrations`, so a failure leaves the database at the previous version. Later changes are
new functions appended to MIGRATIONS, never edits of old ones.
"""

import time
from collections.abc import Callable

import apsw

from .errors import MigrationError

Migration = Callable[[apsw.Connection], None]


def m001_core_tables(db: apsw.Connection) -> None:
    db.execute(
        """
        create table users (
            id integer primary key,
            handle text not null unique,
            display_name text,
            created_at real not null
        );
        create table identities (
            platform text not null,
            platform_user_id text not null,
            user_id integer not null references users(id) on delete cascade,
            created_at real not null,
            primary key (platform, platform_user_id)
        ) without rowid;
        create index identities_user on identities(user_id);
        create table sessions (
            id integer primary key,
            key text not null unique,
            platform text not null,
            chat_id text not null,
            thread_id text not null default '',
            user_id integer references users(id) on delete set null,
            title text,
            created_at real not null,
            updated_at real not null
        );
        create index sessions_user on sessions(user_id, updated_at);
        create table messages (
            id integer primary key,
            session_id integer not null references sessions(id) on delete cascade,
            user_id integer not null references users(id) on delete cascade,
            role text not null check (role in ('user', 'assistant', 'system', 'tool')),
            content text not null,
            ts real not null,
            external_id text
        );
        create unique index messages_external on messages(external_id)
            where external_id is not null;
        create index messages_session on messages(session_id, id);
        create table facts (
            id integer primary key,
            user_id integer not null references users(id) on delete cascade,
            statement text not null,
            source_message_id integer references messages(id) on delete set null,
            confidence real not null check (confidence between 0 and 1),
            created_at real not null,
            updated_at real not null
        );
        create index facts_user on facts(user_id, updated_at);
        create table episodes (
            id integer primary key,
            session_id integer references sessions(id) on delete set null,
            user_id integer references users(id) on delete set null,
            task text not null,
            status text not null default 'running'
                check (status in ('running', 'succeeded', 'failed', 'abandoned')),
            reward real,
            reward_source text check (reward_source in ('verifier', 'judge', 'user')),
            created_at real not null,
            finished_at real
        );
        create index episodes_user on episodes(user_id, created_at);
        """
    )


def m002_message_search(db: apsw.Connection) -> None:
    # The word index reads its text from a view, so the text is stored once (in messages)
    # and each row also carries scope tokens: u<user> s<session> r<role initial>. A search
    # scoped to one user is then an FTS5 AND with a rare token, which FTS5 answers by
    # seeking through the posting lists instead of ranking every match and filtering.
    db.execute(
        """
        create view message_docs as
            select id, content, 'u' || user_id || ' s' || session_id || ' r' || substr(role, 1, 1)
                as scope
            from messages;
        create virtual table messages_fts using fts5(
            content, scope,
            content = 'message_docs', content_rowid = 'id',
            tokenize = 'porter unicode61 remove_diacritics 2'
        );
        insert into messages_fts(messages_fts, rank) values ('automerge', 8);
        create trigger messages_fts_insert after insert on messages begin
            insert into messages_fts(rowid, content, scope) values (
                new.id, new.content,
                'u' || new.user_id || ' s' || new.session_id || ' r' || substr(new.role, 1, 1));
        end;
        create trigger messages_fts_delete after delete on messages begin
            insert into messages_fts(messages_fts, rowid, content, scope) values (
                'delete', old.id, old.content,
                'u' || old.user_id || ' s' || old.session_id || ' r' || substr(old.role, 1, 1));
        end;
        create trigger messages_fts_update after update of content, user_id, session_id, role
        on messages begin
            insert into messages_fts(messages_fts, rowid, content, scope) values (
                'delete', old.id, old.content,
                'u' || old.user_id || ' s' || old.session_id || ' r' || substr(old.role, 1, 1));
            insert into messages_fts(rowid, content, scope) values (
                new.id, new.content,
                'u' || new.user_id || ' s' || new.session_id || ' r' || substr(new.role, 1, 1));
        end;
        insert into messages_fts(messages_fts) values ('rebuild');
        """
    )


def m003_trigram_search(db: apsw.Connection) -> None:
    # Trigrams cost ~3x the text on disk (measured: 4.1x for detail=full), so only
    # messages with non-ASCII text get them: CJK and other scripts without spaces between
    # words, where the word index sees a whole sentence as one token. ASCII substrings are
    # found through phrase matching of their parts and a bounded scan (see search.py).
    db.execute(
        """
        create virtual table messages_trigram using fts5(
            content,
            content = 'messages', content_rowid = 'id',
            tokenize = 'trigram remove_diacritics 1'
        );
        create trigger messages_trigram_insert after insert on messages
        when length(new.content) != octet_length(new.content) begin
            insert into messages_trigram(rowid, content) values (new.id, new.content);
        end;
        create trigger messages_trigram_delete after delete on messages
        when length(old.content) != octet_length(old.content) begin
            insert into messages_trigram(messages_trigram, rowid, content)
                values ('delete', old.id, old.content);
        end;
        create trigger messages_trigram_update after update of content on messages begin
            insert into messages_trigram(messages_trigram, rowid, content)
                select 'delete', old.id, old.content
                where length(old.content) != octet_length(old.content);
            insert into messages_trigram(rowid, content)
                select new.id, new.content
                where length(new.content) != octet_length(new.content);
        end;
        insert into messages_trigram(rowid, content)
            select id, content from messages where length(content) != octet_length(content);
        """
    )


def m004_conversation_turns(db: apsw.Connection) -> None:
    # What a session must keep to be resumed exactly as the model saw it: the tool calls an
    # assistant message made (JSON list of {id, name, arguments}), which call a tool message
    # answers, and summaries that stand in for older turns once a session is compacted.
    # Episodes learn which messages began and ended them, and why they got their reward.
    db.execute(
        """
        alter table messages add column tool_calls text;
        alter table messages add column tool_call_id text;
        create table session_summaries (
            id integer primary key,
            session_id integer not null references sessions(id) on delete cascade,
            through_message_id integer not null,
            summary text not null,
            created_at real not null
        );
        create index session_summaries_session on session_summaries(session_id, through_message_id);
        alter table episodes add column request_message_id integer references messages(id) on delete set null;
        alter table episodes add column reply_message_id integer references messages(id) on delete set null;
        alter table episodes add column reward_reason text;
        create index episodes_session on episodes(session_id, id);
        """
    )


def m005_session_workspaces(db: apsw.Connection) -> None:
    # The snapshot a session's sandbox workspace was last put away as (runtime/workspaces.py).
    db.execute("alter table sessions add column workspace_snapshot text")


def m006_executor_trajectories(db: apsw.Connection) -> None:
    # Executor episodes live in `episodes` (kind 'executor') beside chat turns, so rewards,
    # statuses and the reward ranking work the same for both; the columns below are empty for
    # chat turns. `model_calls` holds each executor model call at token level: ids and
    # logprobs are packed int32/float32 BLOBs, and a call whose prompt extends the previous
    # call of its role stores only the appended tokens (memory/trajectories.py).
    # previous_call_id has no foreign key on purpose: it points inside the same episode, whose
    # calls are deleted together, and a key would need an index to delete without a scan.
    db.execute(
        """
        alter table episodes add column kind text not null default 'chat'
            check (kind in ('chat', 'executor'));
        alter table episodes add column split text check (split in ('train', 'heldout', 'live'));
        alter table episodes add column group_id text;
        alter table episodes add column sandbox_backend text;
        alter table episodes add column snapshot_id text;
        alter table episodes add column snapshot_bytes integer;
        alter table episodes add column verifier text;
        alter table episodes add column parent_episode_id integer references episodes(id) on delete set null;
        alter table episodes add column contains_secret integer not null default 0;
        alter table episodes add column parse_failures integer;
        alter table episodes add column timeouts integer;
        create index episodes_kind on episodes(kind, created_at);
        create index episodes_group on episodes(group_id) where group_id is not null;
        create table model_calls (
            id integer primary key,
            episode_id integer not null references episodes(id) on delete cascade,
            call_index integer not null,
            role text not null check (role in ('executor', 'planner', 'judge')),
            model text not null,
            adapter_version text,
            tokenizer_hash text,
            chat_template_hash text,
            sampling text not null,
            previous_call_id integer,
            prompt_shared integer not null,
            prompt_suffix blob not null,
            completion_ids blob not null,
            completion_logprobs blob not null,
            extends_previous integer not null,
            mismatch text,
            common_prefix integer not null,
            messages_shared integer not null,
            messages text not null,
            text text not null,
            finish_reason text not null,
            retokenized integer not null,
            latency_s real not null,
            created_at real not null,
            unique (episode_id, call_index)
        );
        create index model_calls_role on model_calls(episode_id, role, call_index);
        """
    )


def m007_daemon_inbox_and_access(db: apsw.Connection) -> None:
    # The daemon's durable inbox (memory/inbox.py): every delivered message, button press and
    # reaction, once per (platform, event_id); `lane` orders the items of one session. A reply
    # is recorded before it is sent (one per item) and gets its platform ids once sent; those
    # ids map a reacted-to message back to its episode. Access (memory/access.py): pairing
    # codes, grants made by the operator, failed approvals (rate limit).
    db.execute(
        """
        create table inbox (
            id integer primary key,
            platform text not null,
            event_id text not null,
            kind text not null check (kind in ('message', 'button', 'reaction')),
            lane text not null,
            payload text not null,
            status text not null default 'pending' check (status in ('pending', 'done', 'dropped', 'failed')),
            attempts integer not null default 0,
            retry_at real not null default 0,
            error text,
            received_at real not null,
            finished_at real,
            unique (platform, event_id)
        );
        create index inbox_pending on inbox(lane, id) where status = 'pending';
        create index inbox_finished on inbox(finished_at) where status != 'pending';
        create table replies (
            id integer primary key,
            inbox_id integer not null unique references inbox(id) on delete cascade,
            platform text not null,
            chat_id text not null,
            thread_id text not null default '',
            reply_to text,
            text text not null,
            episode_id integer references episodes(id) on delete set null,
            created_at real not null,
            sent_at real,
            platform_ids text
        );
        create table sent_messages (
            platform text not null,
            chat_id text not null,
            message_id text not null,
            reply_id integer not null references replies(id) on delete cascade,
            episode_id integer references episodes(id) on delete set null,
            primary key (platform, chat_id, message_id)
        ) without rowid;
        create index sent_messages_reply on sent_messages(reply_id);
        create table pairing_codes (
            code text primary key,
            platform text not null,
            platform_user_id text not null,
            chat_id text not null,
            user_name text,
            status text not null default 'pending' check (status in ('pending', 'approved', 'revoked')),
            created_at real not null,
            expires_at real not null
        ) without rowid;
        create index pairing_codes_user on pairing_codes(platform, platform_user_id, created_at);
        create table access_grants (
            platform text not null,
            platform_user_id text not null,
            user_name text,
            via text not null check (via in ('pairing', 'operator')),
            granted_at real not null,
            primary key (platform, platform_user_id)
        ) without rowid;
        create table pairing_failures (at real not null);
        """
    )


def m008_inbox_heads_by_kind(db: apsw.Connection) -> None:
    # The dispatcher asks for the next items of a kind many times a second (memory/inbox.py
    # heads): walking pending items of that kind oldest first stops after a few lanes, where
    # grouping every pending item by lane costs a read of the whole backlog each time.
    db.execute("create index inbox_pending_kind on inbox(kind, id) where status = 'pending'")


def m009_executor_routing(db: apsw.Connection) -> None:
    # Routing by measured competence (memory/routing.py): the kinds of terminal tasks (clusters of
    # instructions, runtime/executor/kinds.py), each executor version's held-out success per kind
    # (appended, newest wins), and every routing decision with the executor episode it produced.
    db.execute(
        """
        create table task_kinds (
            id integer primary key,
            signature text not null unique,
            example text not null,
            created_at real not null
        );
        create table competence (
            id integer primary key,
            version text not null,
            kind text not null,
            success real not null check (success between 0 and 1),
            tasks integer not null check (tasks >= 0),
            measured_at real not null,
            source text not null
        );
        create index competence_version_kind on competence(version, kind, id);
        create table routing_decisions (
            id integer primary key,
            at real not null,
            session_id integer references sessions(id) on delete set null,
            episode_id integer references episodes(id) on delete set null,
            kind text not null,
            route text not null check (route in ('executor', 'planner')),
            version text,
            reason text not null
        );
        create index routing_decisions_at on routing_decisions(at);
        create index routing_decisions_kind on routing_decisions(kind, route, id);
        create index routing_decisions_episode on routing_decisions(episode_id);
        """
    )


def m011_user_model(db: apsw.Connection) -> None:
    # The user model (memory/facts.py, memory/linking.py). Facts gain a kind, how often they were
    # restated, and their history: a fact that contradicts an older one supersedes it (the old
    # row stays, pointing at its successor). A fact may come from several messages
    # (fact_sources). facts_fts indexes statements like messages_fts indexes messages: external
    # content (text stored once) and a scope token per user. Sessions learn which platform
    # identity they belong to, so `unlink` can split a person's conversations again; link codes
    # join two identities of one person; fact_extraction is how far each session was read.
    db.execute(
        """
        alter table facts add column kind text not null default 'other'
            check (kind in ('preference', 'biography', 'relationship', 'plan', 'constraint', 'other'));
        alter table facts add column mentions integer not null default 1;
        alter table facts add column superseded_by integer references facts(id) on delete set null;
        alter table facts add column supersedes integer references facts(id) on delete set null;
        create index facts_current on facts(user_id, updated_at) where superseded_by is null;
        create table fact_sources (
            fact_id integer not null references facts(id) on delete cascade,
            message_id integer not null references messages(id) on delete cascade,
            primary key (fact_id, message_id)
        ) without rowid;
        create index fact_sources_message on fact_sources(message_id);
        insert into fact_sources(fact_id, message_id)
            select id, source_message_id from facts where source_message_id is not null;
        create view fact_docs as select id, statement, 'u' || user_id as scope from facts;
        create virtual table facts_fts using fts5(
            statement, scope,
            content = 'fact_docs', content_rowid = 'id',
            tokenize = 'porter unicode61 remove_diacritics 2'
        );
        create trigger facts_fts_insert after insert on facts begin
            insert into facts_fts(rowid, statement, scope) values (new.id, new.statement, 'u' || new.user_id);
        end;
        create trigger facts_fts_delete after delete on facts begin
            insert into facts_fts(facts_fts, rowid, statement, scope)
                values ('delete', old.id, old.statement, 'u' || old.user_id);
        end;
        create trigger facts_fts_update after update of statement, user_id on facts begin
            insert into facts_fts(facts_fts, rowid, statement, scope)
                values ('delete', old.id, old.statement, 'u' || old.user_id);
            insert into facts_fts(rowid, statement, scope) values (new.id, new.statement, 'u' || new.user_id);
        end;
        insert into facts_fts(facts_fts) values ('rebuild');
        alter table sessions add column platform_user_id text;
        update sessions set platform_user_id = (
            select i.platform_user_id from identities i
            where i.user_id = sessions.user_id and i.platform = sessions.platform)
        where (select count(*) from identities i
               where i.user_id = sessions.user_id and i.platform = sessions.platform) = 1;
        create index sessions_identity on sessions(platform, platform_user_id)
            where platform_user_id is not null;
        create table link_codes (
            code text primary key,
            user_id integer not null references users(id) on delete cascade,
            platform text not null,
            platform_user_id text not null,
            created_at real not null,
            expires_at real not null,
            used_at real
        ) without rowid;
        create index link_codes_user on link_codes(user_id, created_at);
        create table link_failures (at real not null);
        create table fact_extraction (
            session_id integer primary key references sessions(id) on delete cascade,
            through_message_id integer not null
        );
        """
    )


def m010_skills(db: apsw.Connection) -> None:
    # The skill index (memory/skill_index.py): a mirror of the SKILL.md files on disk (the files
    # are the source of truth; the stat and hash say when a file changed), searchable through an
    # external-content FTS5 table over name, description and body. skill_uses records, per chat
    # turn's episode, the skills its prompt offered (viewed = 0) and those it opened (viewed = 1);
    # skill names, not ids, so outcomes outlive an archive and a restore. skill_health holds a
    # failing skill's state: flagged, revised once, archived.
    db.execute(
        """
        create table skills (
            id integer primary key,
            name text not null unique,
            description text not null,
            body text not null,
            trust text not null check (trust in ('trusted', 'untrusted')),
            pinned integer not null default 0,
            file_mtime_ns integer not null,
            file_size integer not null,
            content_hash text not null,
            indexed_at real not null
        );
        create virtual table skills_fts using fts5(
            name, description, body,
            content = 'skills', content_rowid = 'id',
            tokenize = 'porter unicode61 remove_diacritics 2'
        );
        create trigger skills_fts_insert after insert on skills begin
            insert into skills_fts(rowid, name, description, body)
                values (new.id, new.name, new.description, new.body);
        end;
        create trigger skills_fts_delete after delete on skills begin
            insert into skills_fts(skills_fts, rowid, name, description, body)
                values ('delete', old.id, old.name, old.description, old.body);
        end;
        create trigger skills_fts_update after update of name, description, body on skills begin
            insert into skills_fts(skills_fts, rowid, name, description, body)
                values ('delete', old.id, old.name, old.description, old.body);
            insert into skills_fts(rowid, name, description, body)
                values (new.id, new.name, new.description, new.body);
        end;
        create table skill_uses (
            episode_id integer not null references episodes(id) on delete cascade,
            skill text not null,
            viewed integer not null check (viewed in (0, 1)),
            at real not null,
            primary key (episode_id, skill)
        ) without rowid;
        create index skill_uses_skill on skill_uses(skill, viewed, at);
        create table skill_health (
            skill text primary key,
            state text not null check (state in ('flagged', 'revised', 'archived')),
            changed_at real not null,
            since real not null,
            note text not null
        ) without rowid;
        """
    )


def m012_link_requests(db: apsw.Connection) -> None:
    # Operator approval of in-chat links ([users] link_approval = "operator"; memory/linking.py,
    # memory/link_requests.py): a redeemed /link code becomes a request for `temper users
    # approve|deny`. One per code; it lives as long as its code did, counted from the redeem.
    db.execute(
        """
        create table link_requests (
            id integer primary key,
            code text not null unique,
            user_id integer not null references users(id) on delete cascade,
            platform text not null,
            platform_user_id text not null,
            display_name text,
            created_at real not null,
            expires_at real not null,
            decision text check (decision in ('approved', 'denied')),
            decided_at real
        );
        create index link_requests_identity on link_requests(platform, platform_user_id);
        create index link_requests_open on link_requests(expires_at) where decision is null;
        """
    )


MIGRATIONS: list[Migration] = [
    m001_core_tables,
    m002_message_search,
    m003_trigram_search,
    m004_conversation_turns,
    m005_session_workspaces,
    m006_executor_trajectories,
    m007_daemon_inbox_and_access,
    m008_inbox_heads_by_kind,
    m009_executor_routing,
    m010_skills,
    m011_user_model,
    m012_link_requests,
]


def current_version(db: apsw.Connection) -> int:
    db.execute(
        "create table if not exists migrations"
        " (version integer primary key, name text not null, applied_at real not null)"
    )
    row = db.execute("select max(version) from migrations").fetchone()
    return row[0] or 0


def migrate(db: apsw.Connection, target: int | None = None) -> list[str]:
    """Apply pending migrations up to `target` (default: all); return the names applied."""
    target = len(MIGRATIONS) if target is None else target
    applied: list[str] = []
    for version in range(current_version(db) + 1, target + 1):
        migration = MIGRATIONS[version - 1]
        try:
            with db:
                migration(db)
                db.execute(
                    "insert into migrations(version, name, applied_at) values (?, ?, ?)",
                    (version, migration.__name__, time.time()),
                )
        except apsw.Error as error:
            raise MigrationError(f"migration {version} ({migration.__name__}) failed: {error}") from error
        applied.append(migration.__name__)
    return applied
