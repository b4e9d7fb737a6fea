"""Accounts and data for `make fuzz` (scripts/fuzz.sh).

``fuzz_setup.py`` creates an end user with a project and two memories, a service principal,
and a running chat run of that user, and prints their tokens and ids as one JSON object. Run it
against the throwaway database of the fuzzing server only.

``fuzz_setup.py --create-database URL NAME`` creates database NAME on the PostgreSQL server of
URL and prints the URL of the new database; ``--drop-database URL NAME`` drops it."""

import json
import os
import sys
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import psycopg
from psycopg import sql

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

import django

django.setup()

from django.contrib.auth import get_user_model  # noqa: E402

from identity_app.services import project_create, token_issue, user_grant_service  # noqa: E402
from memory_app.memories import services as memory_services  # noqa: E402
from memory_app.memories.models import Origin, Tier  # noqa: E402
from memory_app.runs import services as run_services  # noqa: E402
from memory_app.threads import services as thread_services  # noqa: E402


def create_database(url: str, name: str) -> None:
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    print(urlunsplit(urlsplit(url)._replace(path=f"/{name}")))


def drop_database(url: str, name: str) -> None:
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))


def create_accounts() -> dict:
    users = get_user_model().objects
    user = users.create_user(username="fuzz-user")
    service = users.create_user(username="fuzz-svc")
    user_grant_service(user=service)
    project = project_create(actor=user, name="Fuzzing")
    memory_services.memory_create(
        actor=user, tier=Tier.USER, kind="fact", content="Likes green tea.", origin=Origin.API
    )
    memory_services.memory_create(
        actor=user,
        tier=Tier.PROJECT,
        project_id=project.pk,
        kind="decision",
        content="Use PostgreSQL.",
        origin=Origin.API,
    )
    conversation = thread_services.conversation_create(actor=service, username=user.username, title="fuzz")
    issued = run_services.run_create(
        actor=service,
        username=user.username,
        conversation_id=conversation.pk,
        request_id="fuzz-1",
        worker_id="fuzz-worker",
        lease_seconds=3600,
        prompt="Hello",
    )
    return {
        "user_token": token_issue(user=user)[1],
        "service_token": token_issue(user=service)[1],
        # Keys the passes may revoke and rotate (scripts/schemathesis.toml).
        "user_spare_token_id": token_issue(user=user, name="spare")[0].pk,
        "service_spare_token_id": token_issue(user=service, name="spare")[0].pk,
        "run_token": issued.run_token,
        "run_id": issued.run.pk,
        "project_id": project.pk,
        "conversation_id": conversation.pk,
    }


if __name__ == "__main__":
    if sys.argv[1:2] == ["--create-database"]:
        create_database(*sys.argv[2:4])
    elif sys.argv[1:2] == ["--drop-database"]:
        drop_database(*sys.argv[2:4])
    else:
        print(json.dumps(create_accounts()))
