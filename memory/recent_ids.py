"""RecentIds: ids of users and sessions by name, so a turn does not look them up each time.

Bounded: beyond `ID_CACHE_SIZE` names the least recently used is forgotten, so a daemon's
memory stays flat. The store clears it when a transaction rolls back, since ids handed out
inside that transaction no longer exist.
"""

from collections import OrderedDict

ID_CACHE_SIZE = 4096  # recently used handles and session keys


class RecentIds(OrderedDict[str, int]):
    """Ids by name, forgetting the least recently used beyond `ID_CACHE_SIZE`."""

    def get_recent(self, name: str) -> int | None:
        found = self.get(name)
        if found is not None:
            self.move_to_end(name)
        return found

    def put(self, name: str, value: int) -> None:
        self[name] = value
        self.move_to_end(name)
        if len(self) > ID_CACHE_SIZE:
            self.popitem(last=False)
