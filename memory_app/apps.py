from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class MemoryAppConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "memory_app"
    verbose_name = _("Memory")

    def ready(self):
        from django.conf import settings  # noqa: PLC0415
        from django.core.signals import request_finished  # noqa: PLC0415
        from django.db.models.signals import post_delete  # noqa: PLC0415

        from identity_app.models import Project  # noqa: PLC0415
        from memory_app.automemory.services import auto_memory_log_forget  # noqa: PLC0415
        from memory_app.memories import derived  # noqa: PLC0415 - registers the memory source
        from memory_app.notes import notes_index, workspace  # noqa: PLC0415 - notes_index registers its source
        from memory_app.reads import recorder  # noqa: PLC0415
        from memory_app.scoped.migration import migration_previews_forget  # noqa: PLC0415
        from memory_app.search import checks  # noqa: F401, PLC0415 - registers the pgvector check
        from memory_app.threads import indexing  # noqa: PLC0415 - registers the message source

        # Rows deleted by a database cascade never pass through their owners' services: their
        # search scopes go here, with every document, posting and vector in them.
        post_delete.connect(derived.on_user_deleted, sender=settings.AUTH_USER_MODEL, weak=False)
        post_delete.connect(indexing.on_user_deleted, sender=settings.AUTH_USER_MODEL, weak=False)
        post_delete.connect(notes_index.on_user_deleted, sender=settings.AUTH_USER_MODEL, weak=False)
        post_delete.connect(workspace.on_user_deleted, sender=settings.AUTH_USER_MODEL, weak=False)
        post_delete.connect(derived.on_project_deleted, sender=Project, weak=False)
        # Forgetting a memory also forgets the auto-memory log's copy of its text.
        derived.register_forget_hook(auto_memory_log_forget)
        # ... and the scope-migration plans' copy of it (their previews, in the admin).
        derived.register_forget_hook(migration_previews_forget)
        # Reads buffered while a request was answered are written once its response is out.
        request_finished.connect(recorder.flush_after_request, weak=False, dispatch_uid="memory_reads_flush")
