"""Move user-specific global items to their chat scope (docs/scoped-memory.md, scope migration runbook).

    manage.py migrate_memory_scope inspect [--output plan.json]
    manage.py migrate_memory_scope apply --plan plan.json --confirm [--apply-all-safe] [--dry-run]

``inspect`` only reads. ``apply`` refuses without ``--confirm`` (also for ``--dry-run``, so
the rehearsal and the real run differ by one flag only). ``--dry-run`` writes nothing at all.
A real run that will move at least one item creates the system user it acts as (if missing),
then backs up (SQLite: a copy through the backup API; PostgreSQL: a backup table) and prints
the backup's name; a run with nothing to move says so and takes no backup. See ``memory_app.scoped.migration`` for the rules.
"""

import json
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from config.errors import DomainError
from memory_app.scoped.consolidation import system_actor
from memory_app.scoped.migration import apply_plan, inspect_plan, validate_plan


class Command(BaseCommand):
    help = "Inspect or apply a global→chat scope migration plan."

    def add_arguments(self, parser):
        sub = parser.add_subparsers(dest="action", required=True)
        inspect = sub.add_parser("inspect", help="read-only: write a JSON plan")
        inspect.add_argument("--output", help="write the plan to this file (default: stdout)")
        apply = sub.add_parser("apply", help="apply approved entries of a plan")
        apply.add_argument("--plan", required=True)
        apply.add_argument("--confirm", action="store_true")
        apply.add_argument("--apply-all-safe", action="store_true", help="also every 'migrate' entry not rejected")
        apply.add_argument("--dry-run", action="store_true")
        apply.add_argument("--backup-dir", help="SQLite: where the backup copy goes (default var/backups)")

    def handle(self, *args, action, **options):
        if action == "inspect":
            return self._inspect(options.get("output"))
        return self._apply(**options)

    def _inspect(self, output):
        plan = inspect_plan()
        text = json.dumps(plan, ensure_ascii=False, indent=2)
        if output:
            Path(output).write_text(text + "\n", encoding="utf-8")
            summary = ", ".join(f"{k}={v}" for k, v in plan["summary"].items())
            self.stdout.write(f"wrote {len(plan['entries'])} entries to {output} ({summary})")
        else:
            self.stdout.write(text)

    def _apply(self, *, plan, confirm, apply_all_safe, dry_run, backup_dir, **options):
        if not confirm:
            raise CommandError("Refusing to apply without --confirm (nothing was changed).")
        try:
            data = json.loads(Path(plan).read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise CommandError(f"Cannot read plan {plan}: {exc}") from exc
        try:
            entries = validate_plan(data)
            report = apply_plan(
                entries=entries,
                # Resolved (the system user created if need be) only when something will
                # move, before the backup; a dry run or a no-op run writes nothing.
                actor=system_actor,
                apply_all_safe=apply_all_safe,
                dry_run=dry_run,
                backup_dir=Path(backup_dir) if backup_dir else None,
            )
        except DomainError as exc:
            raise CommandError(exc.message) from exc
        for row in report["results"]:
            if row["result"] != "skipped" or row["detail"] not in ("keep", "not approved"):
                self.stdout.write(f"{row['item_id']}: {row['result']} ({row['detail']})")
        if report["backup"]:
            self.stdout.write(f"backup: {report['backup']}")
        if report["note"]:
            self.stdout.write(report["note"])
        counts = ", ".join(f"{k}={v}" for k, v in sorted(report["counts"].items()))
        self.stdout.write(("dry run, nothing changed: " if dry_run else "done: ") + counts)
