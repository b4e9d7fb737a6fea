"""Backup and restore of a deployment: the database plus the workspace volume (docs/deploy.md).

A backup is a folder: ``database.pgdump`` (``pg_dump`` custom format) or ``database.sqlite3``
(SQLite's online backup), ``workspaces.tar.gz`` (the notes files, nothing else) and
``manifest.json``. The database is taken first, the workspace second, each consistent in
itself (a dump is one snapshot; each notes file is replaced by an atomic rename, so a file is
read whole, old or new). Notes written between the two are in the backup; a user created
between them has a workspace but no row.

Restore fills an empty database and an empty workspace root, and only with the workspaces of
users that exist in the restored database: user ids continue from the dumped sequence, so a
directory of a user created after the dump would otherwise be handed to the next new user.
"""

import io
import json
import os
import re
import shutil
import sqlite3
import subprocess
import tarfile
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import connection

DATABASE_DUMP = "database.pgdump"
DATABASE_FILE = "database.sqlite3"
WORKSPACES = "workspaces.tar.gz"
MANIFEST = "manifest.json"


class BackupError(Exception):
    pass


def _pg_env() -> dict:
    db = settings.DATABASES["default"]
    env = dict(os.environ)
    for key, value in (
        ("PGHOST", db.get("HOST")),
        ("PGPORT", db.get("PORT")),
        ("PGUSER", db.get("USER")),
        ("PGPASSWORD", db.get("PASSWORD")),
        ("PGDATABASE", db.get("NAME")),
    ):
        if value:
            env[key] = str(value)
    if db.get("OPTIONS", {}).get("sslmode"):
        env["PGSSLMODE"] = db["OPTIONS"]["sslmode"]
    return env


def _run(command: list[str]) -> None:
    done = subprocess.run(command, env=_pg_env(), capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise BackupError(f"{command[0]} failed: {done.stderr.strip()[-2000:]}")


def _workspace_members(root: Path, names: tuple[str, ...]) -> Iterator[tuple[str, Path]]:
    """``(relative path, absolute path)`` of every notes file: ``<uid>/agents/<name>``, regular
    files only (a symlink is never followed, a temp file of a publish in flight never taken)."""
    if not root.is_dir():
        return
    for user_dir in sorted(root.iterdir(), key=lambda p: p.name):
        if not user_dir.name.isdigit() or user_dir.is_symlink() or not user_dir.is_dir():
            continue
        agents = user_dir / "agents"
        if agents.is_symlink() or not agents.is_dir():
            continue
        for name in names:
            path = agents / name
            if path.is_file() and not path.is_symlink():
                yield f"{user_dir.name}/agents/{name}", path


def backup_create(*, destination: Path, workspace_names: tuple[str, ...]) -> dict:
    """Write a backup into ``destination`` (a new or empty folder); returns the manifest."""
    destination.mkdir(parents=True, exist_ok=True)
    if any(destination.iterdir()):
        raise BackupError(f"{destination} is not empty")
    if connection.vendor == "postgresql":
        _run(["pg_dump", "--format=custom", "--no-owner", f"--file={destination / DATABASE_DUMP}"])
        database = DATABASE_DUMP
    else:
        connection.ensure_connection()
        with sqlite3.connect(destination / DATABASE_FILE) as target:
            connection.connection.backup(target)
        database = DATABASE_FILE
    files = 0
    with tarfile.open(destination / WORKSPACES, "w:gz") as archive:
        for relative, path in _workspace_members(Path(settings.WORKSPACE_ROOT), workspace_names):
            data = path.read_bytes()  # whole: a publish replaces the file by a rename
            info = tarfile.TarInfo(relative)
            info.size, info.mode, info.mtime = len(data), 0o600, int(path.stat().st_mtime)
            archive.addfile(info, io.BytesIO(data))
            files += 1
    manifest = {
        "created_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "database": database,
        "vendor": connection.vendor,
        "workspace_files": files,
    }
    (destination / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n")
    return manifest


def _database_is_empty() -> bool:
    return "django_migrations" not in connection.introspection.table_names()


def backup_restore(*, source: Path, workspace_names: tuple[str, ...]) -> dict:
    """Restore ``source`` into the configured (empty) database and (empty) workspace root."""
    manifest = json.loads((source / MANIFEST).read_text())
    if manifest["vendor"] != connection.vendor:
        raise BackupError(f"the backup is of {manifest['vendor']}, this database is {connection.vendor}")
    root = Path(settings.WORKSPACE_ROOT)
    if root.exists() and any(root.iterdir()):
        raise BackupError(f"the workspace root {root} is not empty")
    if connection.vendor == "postgresql":
        if not _database_is_empty():
            raise BackupError("the database is not empty; restore into a new one")
        connection.close()
        _run(
            [
                "pg_restore",
                "--no-owner",
                "--exit-on-error",
                "--single-transaction",
                "--dbname",
                _pg_env()["PGDATABASE"],
                str(source / DATABASE_DUMP),
            ]
        )
    else:
        target = Path(settings.DATABASES["default"]["NAME"])
        connection.close()
        if target.exists() and target.stat().st_size:
            raise BackupError(f"{target} exists; restore into a new file")
        shutil.copyfile(source / DATABASE_FILE, target)
    user_ids = _user_ids()
    pattern = re.compile(r"(\d+)/agents/(" + "|".join(re.escape(n) for n in workspace_names) + r")")
    restored, skipped = 0, []
    with tarfile.open(source / WORKSPACES, "r:gz") as archive:
        for member in archive.getmembers():
            match = pattern.fullmatch(member.name)
            if not member.isfile() or match is None:
                raise BackupError(f"unexpected entry in the workspace archive: {member.name!r}")
            if int(match.group(1)) not in user_ids:
                skipped.append(member.name)
                continue
            path = root / member.name
            path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
            content = archive.extractfile(member)
            assert content is not None  # a regular file (member.isfile() above)
            with os.fdopen(fd, "wb") as out:
                out.write(content.read())
                out.flush()
                os.fsync(out.fileno())
            restored += 1
    return {"database": manifest["database"], "workspace_files": restored, "skipped": skipped}


def _user_ids() -> set[int]:
    return set(get_user_model().objects.values_list("pk", flat=True))
