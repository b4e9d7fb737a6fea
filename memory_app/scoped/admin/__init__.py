"""Admin of chat/global scoped items: candidates (audit), chat bindings, and scope-migration
plans with per-entry review and apply. Thin: every change goes through the services.

One module per admin: ``candidates``, ``chat_bindings``, ``migration_plans`` and
``migration_entries`` (with ``migration_report``, apply's results in words). Importing the
package registers them all.
"""

from memory_app.scoped.admin import candidates, chat_bindings, migration_entries, migration_plans

__all__ = ["candidates", "chat_bindings", "migration_entries", "migration_plans"]
