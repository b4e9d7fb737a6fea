"""``manage.py expire_invitations``: delete the pending project invitations past their expiry
time (``INVITATION_EXPIRY_DAYS``). ``memory_worker`` does the same once per round."""

from typing import Any

from django.core.management.base import BaseCommand

from identity_app.services import invitations_expire


class Command(BaseCommand):
    help = "Delete pending project invitations older than INVITATION_EXPIRY_DAYS."

    def handle(self, *args: Any, **options: Any) -> None:
        self.stdout.write(f"expired invitations deleted: {invitations_expire()}")
