"""``python manage.py backup DEST``: the database and the notes files into a new folder
(memory_app/ops/backup.py; docs/deploy.md)."""

import json
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from memory_app.notes.workspace import WORKSPACE_FILES
from memory_app.ops.backup import BackupError, backup_create


class Command(BaseCommand):
    help = "Back up the database and the workspace notes files into DEST (a new or empty folder)."

    def add_arguments(self, parser):
        parser.add_argument("destination", type=Path)

    def handle(self, *args, destination, **options):
        try:
            manifest = backup_create(destination=destination, workspace_names=WORKSPACE_FILES)
        except BackupError as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write(json.dumps(manifest))
