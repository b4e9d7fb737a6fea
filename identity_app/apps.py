from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class IdentityAppConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "identity_app"
    verbose_name = _("Identity")

    def ready(self) -> None:
        from identity_app import schema  # noqa: F401, PLC0415 - registers the OpenAPI auth extension
