"""The catalog: files and index in step (hand edits picked up), the prompt's skill lines within
their budget, views recorded, near-duplicates refused, untrusted skills kept out."""

from __future__ import annotations

from pathlib import Path

import pytest

from memory import MemoryStore
from runtime import SkillCatalog, SkillSettings, count_tokens
from runtime.context import ContextSettings, SessionRef, build_messages
from runtime.skill_catalog import HEADER, wilson_upper
from skills import SkillDocument, SkillExists, SkillLibrary

DOCKER = SkillDocument(
    "docker-prune",
    "Reclaim disk space from Docker images, stopped containers and build cache. Use when a Docker host runs out of disk.",
    "\n1. `docker system df` shows what takes space.\n2. `docker image prune -a`.\n3. `docker builder prune`.\n",
)


@pytest.fixture
def catalog(store: MemoryStore, tmp_path: Path) -> SkillCatalog:
    return SkillCatalog(SkillLibrary(tmp_path / "skills"), store, SkillSettings(sync_interval_s=0))


def many_skills(catalog: SkillCatalog, count: int) -> None:
    for number in range(count):
        catalog.library.create(
            SkillDocument(
                f"task-{number}",
                f"Procedure number {number} for widget {number % 7} maintenance and the gadget {number % 11} "
                "inventory; a long description that goes on and on to use up the prompt budget if it were listed in full.",
                f"\nsteps for widget {number % 7}\n",
            )
        )
    catalog.sync()


def test_a_hand_edit_on_disk_is_picked_up(catalog: SkillCatalog) -> None:
    catalog.create(DOCKER)
    assert [m.name for m in catalog.search("free disk space on docker")] == ["docker-prune"]
    path = catalog.library.root / "docker-prune" / "SKILL.md"
    path.write_text(path.read_text().replace("Reclaim disk space from Docker images", "Rotate nginx logs"))
    report = catalog.sync()
    assert report.updated == ["docker-prune"]
    assert [m.name for m in catalog.search("rotate nginx logs")] == ["docker-prune"]
    path.write_text("---\nname: docker-prune\n---\nbroken by hand\n")  # no description any more
    report = catalog.sync()
    assert report.invalid == {"docker-prune": "description: is required"}
    assert catalog.search("rotate nginx logs") == []
    path.parent.rename(catalog.library.root / "gone")  # folder name and skill name now differ
    assert catalog.sync().removed == [] and catalog.index.count() == 0


def test_an_unchanged_file_is_not_reparsed(catalog: SkillCatalog) -> None:
    catalog.create(DOCKER)
    path = catalog.library.root / "docker-prune" / "SKILL.md"
    path.touch()
    assert catalog.sync().updated == []


def test_prompt_lines_stay_within_the_budget_at_any_library_size(
    catalog: SkillCatalog, store: MemoryStore
) -> None:
    many_skills(catalog, 120)
    catalog.pin("task-3")
    lines = catalog.prompt_lines("widget 2 maintenance for gadget 5", ["earlier we talked about widget 2"])
    assert lines[0][0] == "task-3"  # pinned first
    assert 2 <= len(lines) <= 1 + catalog.settings.prompt_skills
    user = store.ensure_user("ana")
    session = SessionRef(store.ensure_session("s", user_id=user), "s", user, "ana")
    store.add_message(session_id=session.id, user_id=user, role="user", content="widget 2 maintenance")
    messages = build_messages(store, session, "widget 2 maintenance", ContextSettings(), skill_index=lines)
    section = messages[0]["content"].split(HEADER)[1]
    assert count_tokens([{"role": "user", "content": HEADER + section}]) <= 600
    small = SkillCatalog(catalog.library, store, SkillSettings(prompt_tokens=120, sync_interval_s=0))
    tight = small.prompt_lines("widget 2 maintenance for gadget 5")
    assert (
        count_tokens(
            [{"role": "user", "content": HEADER + "\n" + "\n".join(f"- {n}: {t}" for n, t in tight)}]
        )
        <= 120
    )


def test_views_are_recorded_and_untrusted_skills_stay_out(catalog: SkillCatalog, store: MemoryStore) -> None:
    catalog.create(DOCKER)
    catalog.library.create(
        DOCKER.__class__("csv-sort", "Sort CSV files by a column.", "sort -t,\n").with_metadata(
            trust="untrusted"
        )
    )
    catalog.sync()
    user = store.ensure_user("ana")
    episode = store.episodes.start(store.ensure_session("s", user_id=user), user, "docker disk full")
    assert catalog.offer(episode, "docker disk is full") == [("docker-prune", DOCKER.description)]
    assert "docker image prune" in catalog.view("docker-prune", episode_id=episode)
    assert store.skills.viewed_in(episode) == ["docker-prune"] and store.skills.offered_in(episode) == [
        "docker-prune"
    ]
    assert catalog.search("sort csv by column") == []
    with pytest.raises(Exception, match="not approved yet"):
        catalog.view("csv-sort")
    catalog.approve("csv-sort")
    assert [m.name for m in catalog.search("sort csv by column")] == ["csv-sort"]


def test_a_near_duplicate_create_is_refused_with_the_skill_to_patch(catalog: SkillCatalog) -> None:
    catalog.create(DOCKER)
    duplicate = SkillDocument(
        "free-docker-disk",
        "Free disk space taken by Docker: old images, stopped containers, the build cache. Use when the Docker host disk is full.",
        "\n- check with `docker system df`\n- `docker builder prune`\n- `docker image prune -a`\n",
    )
    with pytest.raises(SkillExists, match="'docker-prune' already covers this"):
        catalog.create(duplicate)
    different = SkillDocument(
        "docker-compose-logs",
        "Follow the logs of one service of a Docker Compose project. Use when a compose service misbehaves.",
        "\n`docker compose logs -f --tail 100 SERVICE`\n",
    )
    assert catalog.create(different).version == 1


def test_wilson_upper_bound() -> None:
    assert wilson_upper(0.25, 8) < 0.7 < wilson_upper(0.625, 8)
    assert wilson_upper(0.0, 0) == 1.0
