import argparse
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import transaction
from django.urls import reverse

from config.errors import DomainError
from config.public_address import DEFAULT, STARTED, public_address
from identity_app.services import sign_in_link_issue, token_issue, user_grant_service


def _days(value: str) -> int:
    # No "never": a key that cannot expire is what a leaked key must not be. Long-lived agents
    # rotate their key (the API's rotate route) or get one with a long --expires-in.
    try:
        return int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"must be a number of days (1..{settings.API_TOKEN_MAX_DAYS}); every key expires"
        ) from None


def _names(values: list[str] | None) -> list[str] | None:
    """``--only-users a,b --only-users c`` → ``["a", "b", "c"]``; not given → ``None``."""
    if values is None:
        return None
    return [name.strip() for value in values for name in value.split(",") if name.strip()]


class Command(BaseCommand):
    help = "Issue an API token for USERNAME and print the key once, alone on the last line."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("username")
        parser.add_argument("--create-user", action="store_true", help="Create the user if missing.")
        parser.add_argument("--service", action="store_true", help="Grant the run_agents permission.")
        parser.add_argument("--staff", action="store_true", help="Mark the user as staff.")
        parser.add_argument("--name", default="", help="A label for the token.")
        parser.add_argument(
            "--sign-in-link",
            action="store_true",
            help="Also print a one-time link (at PUBLIC_BASE_URL, else the address `make run` / `make serve` "
            "was started with; valid SIGN_IN_LINK_HOURS) with which the user signs in to the web pages and "
            "chooses a password.",
        )
        parser.add_argument(
            "--expires-in",
            type=_days,
            default=None,
            metavar="DAYS",
            help=f"Days until the key expires (default {settings.API_TOKEN_DEFAULT_DAYS}, "
            f"at most {settings.API_TOKEN_MAX_DAYS}; every key expires).",
        )
        parser.add_argument(
            "--only-users",
            action="append",
            metavar="USERNAMES",
            help="Service tokens: act only for these users (comma-separated, repeatable).",
        )
        parser.add_argument(
            "--only-projects",
            action="append",
            metavar="PROJECT_IDS",
            help="Service tokens: work only in these projects (comma-separated, repeatable).",
        )

    def handle(
        self,
        *args: Any,
        username: str,
        create_user: bool,
        service: bool,
        staff: bool,
        name: str,
        expires_in: int | None,
        only_users: list[str] | None,
        only_projects: list[str] | None,
        sign_in_link: bool,
        **options: Any,
    ) -> None:
        User = get_user_model()
        try:
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
                token, key = token_issue(
                    user=user,
                    name=name,
                    expires_in_days=expires_in,
                    only_users=_names(only_users),
                    only_projects=_names(only_projects),
                )
                link_secret = sign_in_link_issue(user=user)[1] if sign_in_link else None
        except DomainError as exc:
            raise CommandError(exc.message) from None
        self.stderr.write(
            f"Token for {username!r}"
            + (" (service principal)" if service else "")
            + (" (staff)" if staff else "")
            + (" (limited)" if token.restricted else "")
            + f", expires {token.expires_at:%Y-%m-%d %H:%M} UTC. Store it now; it cannot be shown again."
        )
        if link_secret:
            address = public_address()
            url = address.url + reverse("sign_in_link", args=[link_secret])
            self.stderr.write(
                f"Sign-in link for {username!r} (works once, for {settings.SIGN_IN_LINK_HOURS} hours; "
                f"they choose a password there):\n{url}"
            )
            if address.source == STARTED:
                self.stderr.write(
                    f"(The address is the one `make run` / `make serve` was last started with, {address.url}. "
                    "If people reach this service at another address, set PUBLIC_BASE_URL to it and run this again.)"
                )
            elif address.source == DEFAULT:
                self.stderr.write(
                    f"(PUBLIC_BASE_URL is not set and no server was started here with `make run` or `make serve`, "
                    f"so the link assumes {address.url}. Set PUBLIC_BASE_URL to the address people reach this "
                    "service at, e.g. PUBLIC_BASE_URL=https://memory.example.com, and run this again.)"
                )
        self.stdout.write(key)
