"""temper's skill library: SKILL.md folders in the agentskills.io format, on disk, versioned,
scanned, importable. Imports nothing of temper's other packages; memory's index and the
runtime's tools are built on top of it.

- format.py      parse, check and render SKILL.md (`SkillDocument`, `Problem`)
- scan.py        the security scan (`scan_skill` -> `Finding`s that block or warn)
- library.py     `SkillLibrary`: the folders, their history, the archive
- importing.py   `import_path`: agentskills.io / Claude / Hermes-style folders as they come
- similarity.py  `similarity`: the near-duplicate measure and its threshold
"""

from skills.errors import PatchError, SkillBlocked, SkillError, SkillExists, SkillFormatError, SkillNotFound
from skills.format import SKILL_FILE, Problem, SkillDocument, check, parse, split_front_matter
from skills.importing import ImportOutcome, find_skill_folders, import_folder, import_path, slug
from skills.library import Edit, SkillEntry, SkillLibrary, Version, Written, read_folder
from skills.scan import Finding, blocking, scan_skill
from skills.similarity import DUPLICATE_THRESHOLD, similarity

__all__ = [
    "DUPLICATE_THRESHOLD",
    "SKILL_FILE",
    "Edit",
    "Finding",
    "ImportOutcome",
    "PatchError",
    "Problem",
    "SkillBlocked",
    "SkillDocument",
    "SkillEntry",
    "SkillError",
    "SkillExists",
    "SkillFormatError",
    "SkillLibrary",
    "SkillNotFound",
    "Version",
    "Written",
    "blocking",
    "check",
    "find_skill_folders",
    "import_folder",
    "import_path",
    "parse",
    "read_folder",
    "scan_skill",
    "similarity",
    "slug",
    "split_front_matter",
]
