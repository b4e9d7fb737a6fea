"""Fixtures of the MCP tests: ``world`` (what alice, bob and a service principal have), and
``shared_db`` for the transport tests, whose server runs in a subprocess and must see the rows
this process writes."""

import os
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from django.db import connection, connections

from identity_app.models import Role
from identity_app.services import token_issue
from memory_app.threads import services as thread_services
from tests.factories import (
    ChatBindingFactory,
    ChatMemoryFactory,
    MembershipFactory,
    ProjectFactory,
    ProjectMemoryFactory,
    UserMemoryFactory,
)

ROOT = Path(__file__).resolve().parents[3]
ALICE_CHAT = "milky:private:10001"


@dataclass
class World:
    alice_memory: object
    bob_memory: object
    project_memory: object
    chat_memory: object
    alice_thread: object
    bob_thread: object


@pytest.fixture
def world(alice, bob, mallory, svc):
    """alice: a memory, a project she shares with bob (with a memory of it), a chat bound to her
    with a chat memory, a conversation; bob: a memory and a conversation of his own."""
    project = ProjectFactory(name="Apollo")
    MembershipFactory(project=project, user=alice, role=Role.OWNER)
    MembershipFactory(project=project, user=bob, role=Role.MEMBER)
    ChatBindingFactory(chat_key=ALICE_CHAT, user=alice)
    alice_thread = thread_services.conversation_create(actor=svc, username="alice", title="Trip planning")
    for role, content in [
        ("user", "Which airline should I book for Lisbon?"),
        ("assistant", "TAP flies direct from Berlin to Lisbon every morning."),
    ]:
        thread_services.message_create(actor=svc, conversation_id=alice_thread.pk, role=role, content=content)
    bob_thread = thread_services.conversation_create(actor=svc, username="bob", title="Bob's salary talk")
    thread_services.message_create(
        actor=svc, conversation_id=bob_thread.pk, role="user", content="My salary negotiation is on Friday."
    )
    return World(
        alice_memory=UserMemoryFactory(owner=alice, content="Alice drinks green tea every morning."),
        bob_memory=UserMemoryFactory(owner=bob, content="Bob prefers window seats on long flights."),
        project_memory=ProjectMemoryFactory(project=project, content="Apollo uses PostgreSQL for billing."),
        chat_memory=ChatMemoryFactory(scope_id=ALICE_CHAT, content="Alice likes jazz playlists while coding."),
        alice_thread=alice_thread,
        bob_thread=bob_thread,
    )


def key_for(user, **options) -> str:
    return token_issue(user=user, **options)[1]


@pytest.fixture
def shared_db(transactional_db):
    """Environment for a server subprocess that sees this process's database.

    The test database itself, on either engine: a transactional test commits its rows."""
    if connection.vendor == "postgresql":
        s = connection.settings_dict
        auth = s["USER"] + (f":{s['PASSWORD']}" if s["PASSWORD"] else "")
        yield {"DATABASE_URL": f"postgresql://{auth}@{s['HOST'] or '127.0.0.1'}:{s['PORT'] or 5432}/{s['NAME']}"}
        return
    # SQLite: the test database is a file (tests/settings.py); a transactional test commits to it.
    yield {"SQLITE_PATH": str(connection.settings_dict["NAME"])}


def closing_its_connections(coroutine_function):
    """An async scenario whose own ORM queries (``DJANGO_ALLOW_ASYNC_UNSAFE``) open connections
    of its own context (Django keeps them per async context, not per thread): closed when it
    ends, or the test database could not be dropped at the end of the session."""

    async def scenario():
        try:
            await coroutine_function()
        finally:
            connections.close_all()

    return scenario


def server_env(shared: dict, workspace_root, **extra) -> dict:
    """The environment of a ``manage.py mcp_server`` subprocess: the test settings, the shared
    database and workspace root, nothing else from this process."""
    env = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": os.environ.get("HOME", ""),
        "DJANGO_SETTINGS_MODULE": "tests.settings",
        "WORKSPACE_ROOT": str(workspace_root),
        "DB_CONN_MAX_AGE": "0",
        "LOG_LEVEL": "WARNING",
        "PYTHONUNBUFFERED": "1",
        **shared,
        **extra,
    }
    return {k: v for k, v in env.items() if v is not None}


MANAGE = [sys.executable, str(ROOT / "manage.py"), "mcp_server"]
