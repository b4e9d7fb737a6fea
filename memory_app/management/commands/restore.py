"""``python manage.py restore SRC``: a backup into an empty database and an empty workspace root
(memory_app/ops/backup.py; docs/deploy.md)."""

import json
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from memory_app.notes.workspace import WORKSPACE_FILES
from memory_app.ops.backup import BackupError, backup_restore


class Command(BaseCommand):
    help = "Restore a backup made by `backup` into an empty database and an empty workspace root."

    def add_arguments(self, parser):
        parser.add_argument("source", type=Path)

    def handle(self, *args, source, **options):
        try:
            report = backup_restore(source=source, workspace_names=WORKSPACE_FILES)
        except BackupError as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write(json.dumps(report))
