"""In-memory fakes of the storage, audit and user ports, shipped with the package; each
passes the same contract suite as its SQLite adapter."""

from citadel.adapters.memory.audit import InMemoryAuditLog
from citadel.adapters.memory.library import InMemoryLibrary
from citadel.adapters.memory.users import InMemoryUsers

__all__ = ["InMemoryAuditLog", "InMemoryLibrary", "InMemoryUsers"]
