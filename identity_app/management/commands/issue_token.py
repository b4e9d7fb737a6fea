from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from identity_app.services import token_issue, user_grant_service


class Command(BaseCommand):
    help = "Issue an API token for USERNAME and print the key once, alone on the last line."

    def add_arguments(self, parser):
        parser.add_argument("username")
        parser.add_argument("--create-user", action="store_true", help="Create the user if missing.")
        parser.add_argument("--service", action="store_true", help="Grant the run_agents permission.")
        parser.add_argument("--staff", action="store_true", help="Mark the user as staff.")
        parser.add_argument("--name", default="", help="A label for the token.")

    def handle(self, *args, username, create_user, service, staff, name, **options):
        User = get_user_model()
        with transaction.atomic():
            user = User.objects.filter(username=username).first()
            if user is None:
                if not create_user:
                    raise CommandError(f"No user {username!r} (use --create-user).")
                user = User.objects.create_user(username=username)
                self.stderr.write(f"Created user {username!r} (no password; token access only).")
            if staff and not user.is_staff:
                user.is_staff = True
                user.save(update_fields=["is_staff"])
            if service:
                user_grant_service(user=user)
            _, key = token_issue(user=user, name=name)
        self.stderr.write(
            f"Token for {username!r}"
            + (" (service principal)" if service else "")
            + (" (staff)" if staff else "")
            + ". Store it now; it cannot be shown again."
        )
        self.stdout.write(key)
