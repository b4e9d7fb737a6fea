"""What context assembly made of each workspace file, kept per process while the file is
unchanged (docs/runs.md, "Context"): a stat, not a read, per file and request.

An entry holds the file's identity (device, inode, size, modification and change times in
nanoseconds), the SHA-256 of the bytes read and the text built from them. A request whose stat
matches the entry uses the text without opening the file. Every publish is a rename of a new
file (a new inode), and an edit in place moves the change time, which no user can set. Only a
change within the file system's clock tick of the last one could keep all five equal, so an
entry read within ``RACY_NS`` of the file's change is trusted only after its bytes are read
again and hashed (a hash match still skips the build); the next read after that window
settles it.
"""

import hashlib
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable
from dataclasses import dataclass

from memory_app.notes.workspace import FileRead, Workspace

MAX_ENTRIES = 2048
RACY_NS = 2_000_000_000


@dataclass(frozen=True)
class _Entry:
    identity: tuple
    digest: bytes
    value: object  # what ``build`` made: a text, or low-trust content ready for its frame
    racy: bool


_entries: OrderedDict[tuple, _Entry] = OrderedDict()
_lock = threading.Lock()


def file_text(
    workspace: Workspace, name: str, *, max_bytes: int, variant: Hashable, build: Callable[[FileRead], object]
) -> object:
    """``build(read)`` of at most ``max_bytes`` of the file, from the cache when the file has not
    changed. ``variant`` names what ``build`` makes (the same file may be built differently)."""
    return file_version(workspace, name, max_bytes=max_bytes, variant=variant, build=build)[0]


def file_version(
    workspace: Workspace, name: str, *, max_bytes: int, variant: Hashable, build: Callable[[FileRead], object]
) -> tuple[object, str]:
    """``file_text`` and the SHA-256 (hex) of the bytes it was built from ('' when there is no
    file): for a file read whole, the ``after_sha256`` of the change that wrote it."""
    key = (workspace.root, workspace.user_id, name, max_bytes, variant)
    identity = workspace.file_identity(name)
    if identity is None:
        _forget(key)
        return build(FileRead(b"", 0, False)), ""
    with _lock:
        entry = _entries.get(key)
        if entry is not None:
            _entries.move_to_end(key)
    if entry is not None and not entry.racy and entry.identity == identity:
        return entry.value, entry.digest[:32].hex()
    read = workspace.read_file(name, max_bytes=max_bytes)
    # Whether the file goes on past the bytes read is part of what was built (its cut marker).
    digest = hashlib.sha256(read.content).digest() + bytes([read.truncated])
    value = entry.value if entry is not None and entry.digest == digest else build(read)
    if read.identity is not None:
        racy = time.time_ns() - max(read.identity[3], read.identity[4]) < RACY_NS
        with _lock:
            _entries[key] = _Entry(read.identity, digest, value, racy)
            _entries.move_to_end(key)
            while len(_entries) > MAX_ENTRIES:
                _entries.popitem(last=False)
    return value, digest[:32].hex()


def _forget(key: tuple) -> None:
    with _lock:
        _entries.pop(key, None)


def clear() -> None:
    with _lock:
        _entries.clear()
