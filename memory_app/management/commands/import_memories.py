"""Import an export file for a user, through the service the API import uses (docs/home.md).

    manage.py import_memories FILE --user USERNAME [--legacy] [--dry-run]

Without ``--legacy`` it is the API's import, run by an operator: the user's memories, notes
files, profile fields and settings; scope-migration clue keys are dropped. ``--legacy`` keeps
those clue keys (in metadata and evidence) and brings ``memories.global`` in as pre-isolation
global items (the one way to create them from a file), written as the system user, so that
``migrate_memory_scope inspect`` can judge them afterwards. ``--dry-run`` checks the file and
reports what would happen without changing anything. An invalid file changes nothing and exits
non-zero.
"""

import functools
from pathlib import Path

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from config.errors import DomainError
from memory_app.home.services.import_file import MAX_IMPORT_BYTES, import_parse
from memory_app.home.services.importing import home_import
from memory_app.memories.models import Origin
from memory_app.scoped.consolidation import system_actor


class Command(BaseCommand):
    help = "Import a memory export file (JSON) for a user; --legacy also brings pre-isolation global items in."

    def add_arguments(self, parser):
        parser.add_argument("file", help="an export of this service (JSON)")
        parser.add_argument("--user", required=True, help="the username the file is imported for")
        parser.add_argument(
            "--legacy",
            action="store_true",
            help="keep scope-migration clue keys and import memories.global as global items",
        )
        parser.add_argument("--dry-run", action="store_true", help="report what would happen; change nothing")

    def handle(self, *args, file, user, legacy, dry_run, **options):
        account = get_user_model().objects.filter(username=user, is_active=True).first()
        if account is None:
            raise CommandError(f"No active user {user!r}; nothing was imported.")
        try:
            with Path(file).open("rb") as handle:
                raw = handle.read(MAX_IMPORT_BYTES + 1)
        except OSError as exc:
            raise CommandError(f"Cannot read {file}: {exc.strerror or exc}; nothing was imported.") from exc
        try:
            report = home_import(
                actor=account,
                data=import_parse(raw),
                origin=Origin.API,
                legacy=legacy,
                # Resolved (the system user created if need be) only when a global item is written.
                global_writer=functools.cache(system_actor) if legacy else None,
                dry_run=dry_run,
            )
        except DomainError as exc:
            raise CommandError(f"{exc.message} Nothing was imported.") from exc
        for message in report.conflicts:
            self.stdout.write(f"conflict: {message}")
        written = sum(1 for row in report.notes_files if row["result"] == "written")
        applied = sum(1 for row in report.settings if row["result"] == "applied")
        # A dry run writes nothing: its counts are what the real run would do.
        created = [row for row in report.results if row["result"] in ("created", "would_create")]
        in_global = sum(1 for row in created if row.get("section") == "global")
        counts = (
            f"imported={len(created)} global={in_global} notes_written={written} "
            f"settings_applied={applied} skipped={report.skipped} conflicts={len(report.conflicts)}"
        )
        self.stdout.write(("dry run, nothing changed, it would do: " if dry_run else "done: ") + counts)
