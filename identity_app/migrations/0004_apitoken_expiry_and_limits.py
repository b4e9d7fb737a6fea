from datetime import timedelta

from django.conf import settings
from django.db import migrations, models
from django.db.backends.base.schema import BaseDatabaseSchemaEditor
from django.db.migrations.state import StateApps
from django.utils import timezone


def expire_existing_tokens_later(apps: StateApps, schema_editor: BaseDatabaseSchemaEditor) -> None:
    """Keys issued before expiry existed get the default lifetime from now, not from their
    creation, so that upgrading does not cut off running agents at once."""
    ApiToken = apps.get_model("identity_app", "ApiToken")
    days = getattr(settings, "API_TOKEN_DEFAULT_DAYS", 90)
    ApiToken.objects.filter(expires_at__isnull=True).update(expires_at=timezone.now() + timedelta(days=days))


class Migration(migrations.Migration):
    dependencies = [
        ("identity_app", "0003_profile_write_global_memories_permission"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.AddField(
            model_name="apitoken",
            name="expires_at",
            field=models.DateTimeField(null=True),
        ),
        migrations.RunPython(expire_existing_tokens_later, migrations.RunPython.noop),
        migrations.AlterField(
            model_name="apitoken",
            name="expires_at",
            field=models.DateTimeField(),
        ),
        migrations.AddField(
            model_name="apitoken",
            name="only_user_ids",
            field=models.JSONField(blank=True, default=None, null=True),
        ),
        migrations.AddField(
            model_name="apitoken",
            name="only_project_ids",
            field=models.JSONField(blank=True, default=None, null=True),
        ),
        migrations.AddIndex(
            model_name="apitoken",
            index=models.Index(fields=["user", "-created_at"], name="apitoken_user_idx"),
        ),
    ]
