"""The machinery behind ``tests/test_route_matrix.py``: walk the URL configuration, build one
world of rows owned by alice, authenticate as each persona, run one request per case inside a
savepoint that is rolled back, and tell what a refused write must have left unchanged.

The table of expected statuses lives in the test module; nothing here knows a route by name.
"""

import json
import re
import secrets
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import timedelta
from functools import lru_cache
from pathlib import Path

from django.apps import apps
from django.conf import settings
from django.contrib import admin
from django.contrib.auth.models import Group
from django.db import connection, transaction
from django.test import Client
from django.test.client import ClientHandler
from django.urls import URLPattern, URLResolver, get_resolver, reverse
from django.utils import timezone

from identity_app.models import Invitation, Role
from identity_app.services import invitation_create, token_issue, user_grant_service
from memory_app.automemory import services as automemory_services
from memory_app.automemory.models import AutoMemoryClaim, AutoMemoryLogEntry, AutoMemoryOutcome
from memory_app.memories import services as memory_services
from memory_app.notes import services as notes_services
from memory_app.ops.models import BackgroundJob
from memory_app.ops.services import worker_heartbeat
from memory_app.runs import services as run_services
from memory_app.scoped.migration import inspect_plan, plan_import
from memory_app.scoped.models import ChatForgetUndo
from memory_app.scoped.services import scoped_item_create
from memory_app.threads import services as thread_services
from tests.factories import (
    ChatBindingFactory,
    MembershipFactory,
    MemoryCandidateFactory,
    MessageFactory,
    ProfileFactory,
    ProjectFactory,
    ProjectMemoryFactory,
    ProjectSummaryFactory,
    UserFactory,
    UserMemoryFactory,
)

HTTP_METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE")

# --- the URL configuration -----------------------------------------------------------------

MODEL_ADMIN_VIEWS = ("changelist", "add", "history", "delete", "change")


@dataclass(frozen=True)
class Route:
    """One URL pattern of ``config.urls``.

    ``key`` is the namespaced URL name (``my-memories``, ``web:home``, ``admin:index``), or the
    full pattern for an unnamed route. ``admin_view`` is set for the standard views of a
    registered ModelAdmin (changelist, add, history, delete, change, and the unnamed
    ``<object_id>/`` redirect), which the matrix covers per ModelAdmin rather than per URL.
    """

    key: str
    kind: str  # "api", "web" or "admin"
    pattern: str
    view: str
    methods: tuple[str, ...]
    model_admin: admin.ModelAdmin | None = None
    admin_view: str | None = None


def _segment(pattern) -> str:
    text = str(pattern)
    return text.removeprefix("^").removesuffix("$")


def view_methods(callback) -> tuple[str, ...]:
    """The HTTP methods a view answers (HEAD and OPTIONS aside).

    Class-based views (DRF or Django) declare them by their handler methods; function views by
    ``require_http_methods`` somewhere in their decorator chain. A function view without one
    answers every method, and so needs a table entry for every method.
    """
    cls = getattr(callback, "cls", None) or getattr(callback, "view_class", None)
    if cls is not None:
        return tuple(m.upper() for m in cls.http_method_names if m.upper() in HTTP_METHODS and hasattr(cls, m))
    func = callback
    while func is not None:
        code = getattr(func, "__code__", None)
        if code is not None:
            for name, cell in zip(code.co_freevars, func.__closure__ or (), strict=True):
                if name == "request_method_list":
                    return tuple(m for m in HTTP_METHODS if m in {x.upper() for x in cell.cell_contents})
        func = getattr(func, "__wrapped__", None)
    return HTTP_METHODS


def _view_name(callback) -> str:
    target = getattr(callback, "cls", None) or getattr(callback, "view_class", None) or callback
    return f"{target.__module__}.{getattr(target, '__qualname__', target)}"


# The mem0-compatible API is also served at the site root, at mem0's own paths.
COMPAT_ROOT = ("v1/", "v2/", "v3/")


def _kind(pattern: str) -> str:
    if pattern.startswith("admin/"):
        return "admin"
    if pattern.startswith(("api/", *COMPAT_ROOT)):
        return "api"
    return "web"


def _walk(patterns, prefix: str, namespace: str | None) -> Iterator[Route]:
    for entry in patterns:
        if isinstance(entry, URLResolver):
            inner = namespace
            if entry.namespace:
                inner = f"{namespace}:{entry.namespace}" if namespace else entry.namespace
            yield from _walk(entry.url_patterns, prefix + _segment(entry.pattern), inner)
            continue
        assert isinstance(entry, URLPattern), entry
        pattern = prefix + _segment(entry.pattern)
        name = f"{namespace}:{entry.name}" if namespace and entry.name else entry.name
        callback = entry.callback
        model_admin = getattr(callback, "model_admin", None)
        admin_view = None
        if model_admin is not None:
            suffix = entry.name.rsplit("_", 1)[-1] if entry.name else "redirect"
            admin_view = suffix if suffix in (*MODEL_ADMIN_VIEWS, "redirect") else None
        yield Route(
            key=name or pattern,
            kind=_kind(pattern),
            pattern=pattern,
            view=_view_name(callback),
            methods=view_methods(callback),
            model_admin=model_admin if admin_view else None,
            admin_view=admin_view,
        )


def routes() -> list[Route]:
    """Every route of the URL configuration, in resolution order."""
    return list(_walk(get_resolver().url_patterns, "", None))


# --- the world -----------------------------------------------------------------------------

CHAT_KEY = "milky:private:10001"
LANE_KEY = f"{CHAT_KEY}:cron:daily"  # a lane of alice's chat: the same chat
GROUP_KEY = "milky:group:30003"  # a group chat, bound to nobody

# Words that appear only in one kind of alice's rows, so a response that carries one of them
# shows which row leaked.
MARKERS = {
    "user": "quokka",  # alice's own memory (user tier)
    "notes": "narwhal",  # alice's MEMORY.md
    "thread": "tapir",  # alice's conversation title, message and run prompts
    "project": "pangolin",  # a memory of alice's project Apollo
    "chat": "peanuts",  # an item of the private chat bound to alice
}


@dataclass
class World:
    """alice owns everything; bob is a member and vera a viewer of her project Apollo; mallory
    has a project of her own; svc is a service principal; staff is staff without permissions;
    root is a superuser."""

    users: dict = field(default_factory=dict)
    tokens: dict = field(default_factory=dict)
    sessions: dict = field(default_factory=dict)
    run_tokens: dict = field(default_factory=dict)
    objects: dict = field(default_factory=dict)
    baseline: "Snapshot | None" = None

    def __getattr__(self, name):
        try:
            return self.__dict__["objects"][name]
        except KeyError:
            raise AttributeError(name) from None


def build_world() -> World:
    world = World()
    for name in ("alice", "bob", "mallory", "vera"):
        world.users[name] = UserFactory(username=name)
    world.users["svc"] = UserFactory(username="svc")
    user_grant_service(user=world.users["svc"])
    world.users["staff"] = UserFactory(username="staff", is_staff=True)
    world.users["root"] = UserFactory(username="root", is_staff=True, is_superuser=True)
    for name in ("alice", "bob", "mallory", "vera", "svc"):
        world.objects[f"{name}_token"], world.tokens[name] = token_issue(user=world.users[name])
    world.objects["lsvc_token"], world.tokens["lsvc"] = token_issue(user=world.users["svc"], only_users=["bob"])
    alice, svc, root = world.users["alice"], world.users["svc"], world.users["root"]

    apollo = ProjectFactory(name="Apollo")
    MembershipFactory(project=apollo, user=alice, role=Role.OWNER)
    MembershipFactory(project=apollo, user=world.users["bob"], role=Role.MEMBER)
    MembershipFactory(project=apollo, user=world.users["vera"], role=Role.VIEWER)
    MembershipFactory(project=ProjectFactory(name="Zeus"), user=world.users["mallory"], role=Role.OWNER)
    ProfileFactory(user=alice, display_name="Alice")
    invitation_create(actor=alice, project_id=apollo.pk, username="mallory")

    o = world.objects
    o["project"] = apollo
    o["invitation"] = Invitation.objects.get(project=apollo, username="mallory")
    o["user_memory"] = UserMemoryFactory(owner=alice, content=f"I keep a {MARKERS['user']} plush on my desk")
    o["project_memory"] = ProjectMemoryFactory(project=apollo, content=f"We name releases after a {MARKERS['project']}")
    o["project_summary"] = ProjectSummaryFactory(project=apollo)
    o["binding"] = ChatBindingFactory(user=alice, chat_key=CHAT_KEY)
    o["job"] = BackgroundJob.objects.create(kind="auto_memory_round", user=alice)
    # Two jobs of the service principal: queued by its unlimited token, and by its limited one.
    o["svc_job"] = BackgroundJob.objects.create(kind="auto_memory_round", user=svc)
    o["lsvc_job"] = BackgroundJob.objects.create(
        kind="auto_memory_round", user=svc, limited_token=o["lsvc_token"], dedupe_key=f"#token:{o['lsvc_token'].pk}"
    )
    worker_heartbeat(worker_id="matrix-worker", started_at=timezone.now())
    o["chat_item"], _ = scoped_item_create(
        actor=svc, session_id=CHAT_KEY, kind="fact", content=f"alice chat fact: allergic to {MARKERS['chat']}"
    )
    o["candidate"] = MemoryCandidateFactory(memory=o["chat_item"])
    # What forgetting a chat of hers would let her undo (nothing kept: undoing it restores no row).
    o["undo"] = ChatForgetUndo.objects.create(
        user=alice, chat_key=CHAT_KEY, expires_at=timezone.now() + timedelta(hours=1)
    )
    o["conversation"] = thread_services.conversation_create(
        actor=svc, username="alice", title=f"Trip with the {MARKERS['thread']}", session_key=CHAT_KEY
    )
    main = run_services.run_create(
        actor=svc,
        username="alice",
        conversation_id=o["conversation"].pk,
        request_id="req-main",
        worker_id="w1",
        lease_seconds=3600,
        prompt=f"Plan the {MARKERS['thread']} trip",
    )
    sub = run_services.run_create(
        actor=svc,
        username="alice",
        conversation_id=o["conversation"].pk,
        request_id="req-sub",
        kind="subagent",
        parent_run_id=main.run.pk,
        worker_id="w1",
        lease_seconds=3600,
        prompt="Look up train times",
    )
    o["main_run"], o["sub_run"] = main.run, sub.run
    # bob's conversation in a group chat (bound to nobody), given by the unlimited principal:
    # out of the reach of the token limited to bob, which may not run in it.
    o["group_conversation"] = thread_services.conversation_create(
        actor=svc, username="bob", title="Group", session_key=GROUP_KEY
    )
    o["group_run"] = run_services.run_create(
        actor=svc,
        username="bob",
        conversation_id=o["group_conversation"].pk,
        request_id="req-group",
        worker_id="w1",
        lease_seconds=3600,
    ).run
    world.run_tokens.update(main=main.run_token, sub=sub.run_token)
    o["message"] = MessageFactory(conversation=o["conversation"], content=f"Bring the {MARKERS['thread']} along")
    notes_services.user_settings_update(user=alice, enable_memory=True)
    # The history of her notes file: one change, which wrote the file each case starts from.
    notes_services.workspace_file_write(user=alice, name="MEMORY.md", content=NOTES_TEXT)
    o["notes_change"] = alice.workspace_changes.get()
    automemory_services.auto_memory_settings_update(user=alice, changes={"generate": True})
    o["log_entry"] = AutoMemoryLogEntry.objects.create(
        user=alice, run=main.run, run_ref=main.run.pk, outcome=AutoMemoryOutcome.SKIPPED, gate="idle"
    )
    o["claim"] = AutoMemoryClaim.objects.create(
        run=main.run, token="claim-token", expires_at=timezone.now() + timedelta(minutes=5)
    )
    memory_services.memory_create(
        actor=root, tier="global", kind="fact", content="Someone likes oolong", evidence={"session_id": CHAT_KEY}
    )
    o["plan"] = plan_import(data=inspect_plan(), name="matrix plan", actor=root)
    o["group"] = Group.objects.create(name="reviewers")
    if apps.is_installed("axes"):  # the login lockout's records, shown in the admin
        record = {"username": "someone", "ip_address": "127.0.0.9", "user_agent": "test", "path_info": "/"}
        apps.get_model("axes", "AccessAttempt").objects.create(**record, failures_since_start=1)
        apps.get_model("axes", "AccessFailureLog").objects.create(**record)
        apps.get_model("axes", "AccessLog").objects.create(**record)
    for name, user in world.users.items():
        client = Client()
        client.force_login(user)
        world.sessions[name] = client.cookies[settings.SESSION_COOKIE_NAME].value
    return world


@contextmanager
def world_transaction():
    """An outer transaction for the world, rolled back at the end.

    Marked like the blocks of ``django.test.TestCase`` so that the services' durable
    transactions may run inside it, exactly as they run inside a test.
    """
    atomic = transaction.atomic()
    atomic._from_testcase = True
    with atomic:
        yield
        transaction.set_rollback(True)


NOTES_TEXT = f"- Feeds the {MARKERS['notes']} on Sundays\n"


def write_notes_file(world: World) -> Path:
    """alice's MEMORY.md in the current test's workspace root."""
    path = Path(settings.WORKSPACE_ROOT) / str(world.users["alice"].pk) / "agents" / "MEMORY.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(NOTES_TEXT, encoding="utf-8")
    return path


# --- personas ------------------------------------------------------------------------------

TOKEN_PERSONAS = ("anon", "forged", "frun", "sub", "main")
USER_PERSONAS = ("alice", "bob", "mallory", "vera", "svc")
PERSONAS = (*TOKEN_PERSONAS, *USER_PERSONAS)
# On the API only: the service principal's token limited to bob, for which alice and all that
# is hers do not exist.
API_PERSONAS = (*PERSONAS, "lsvc")
ADMIN_PERSONAS = (*PERSONAS, "staff", "root")

# Which of alice's markers a persona may ever read: alice and her main agent everything; bob
# and vera the project; the service principal the threads and chat items it writes for her.
MAY_READ = {
    "alice": set(MARKERS),
    "main": set(MARKERS),
    "bob": {"project"},
    "vera": {"project"},
    # ... and, acting for her (the mem0-compatible API, the store), her own memories.
    "svc": {"thread", "chat", "user"},
    "root": set(MARKERS),
}


@lru_cache(maxsize=1)
def _shared_handler() -> ClientHandler:
    """One request handler for every case, as a server process has: building the middleware
    chain anew for each of a few thousand requests would dominate the run."""
    return ClientHandler(enforce_csrf_checks=False)


def client_for(persona: str, world: World, kind: str) -> Client:
    """A client that presents ``persona``'s credentials the way that kind of route takes them:
    API tokens and run tokens as headers, users of the web UI and the admin as a session."""
    headers = {}
    if persona == "forged":
        headers["HTTP_AUTHORIZATION"] = "Token mk_" + secrets.token_urlsafe(32)
    elif persona == "frun":
        run = world.main_run
        headers["HTTP_AUTHORIZATION"] = f"Run {run.pk}.{run.lease_generation}.{secrets.token_urlsafe(32)}"
    elif persona in ("sub", "main"):
        headers["HTTP_AUTHORIZATION"] = f"Run {world.run_tokens[persona]}"
    client = Client(**headers)
    client.handler = _shared_handler()
    if kind == "api" and persona in world.tokens:
        client.defaults["HTTP_AUTHORIZATION"] = f"Token {world.tokens[persona]}"
    elif persona in world.sessions:
        client.cookies[settings.SESSION_COOKIE_NAME] = world.sessions[persona]
    return client


# --- expectations --------------------------------------------------------------------------


@dataclass(frozen=True)
class Expect:
    """What one persona must get: a status, or a redirect to a login page.

    ``login`` is 302 to the web login page, ``admin-login`` 302 to the admin's; ``302`` any other
    redirect; ``-`` means the case is not run (a positive write the admin tests cover)."""

    text: str

    @property
    def skipped(self) -> bool:
        return self.text == "-"

    @property
    def status(self) -> int:
        return 302 if self.text in ("login", "admin-login") else int(self.text.split(":")[0])

    @property
    def code(self) -> str | None:
        return self.text.split(":", 1)[1] if ":" in self.text else None

    @property
    def refused(self) -> bool:
        return self.text in ("login", "admin-login") or self.status >= 400

    def login_url(self) -> str | None:
        if self.text == "login":
            return reverse(settings.LOGIN_URL)
        if self.text == "admin-login":
            return reverse("admin:login")
        return None


_CELL = re.compile(r"^(?:-|login|admin-login|[1-5]\d\d(?::[a-z_]+)?)$")


def parse_table(text: str, personas: tuple[str, ...]) -> dict[tuple[str, str, str], dict[str, Expect]]:
    """``route method target persona…`` rows under a header line naming the personas."""
    lines = [line for line in text.strip().splitlines() if line.strip() and not line.lstrip().startswith("#")]
    header = lines[0].split()
    if tuple(header[3:]) != personas or header[:3] != ["route", "method", "target"]:
        raise ValueError(f"table header must be: route method target {' '.join(personas)}")
    table = {}
    for number, line in enumerate(lines[1:], start=2):
        cells = line.split()
        if len(cells) != len(header):
            raise ValueError(f"table row {number} has {len(cells)} cells, not {len(header)}: {line!r}")
        route, method, target, *statuses = cells
        if method not in HTTP_METHODS:
            raise ValueError(f"table row {number}: unknown method {method}")
        bad = [cell for cell in statuses if not _CELL.match(cell)]
        if bad:
            raise ValueError(f"table row {number}: cannot read {bad}")
        if (route, method, target) in table:
            raise ValueError(f"table row {number} repeats {route} {method} {target}")
        table[route, method, target] = {p: Expect(cell) for p, cell in zip(personas, statuses, strict=True)}
    return table


# --- what a refused write must leave as it was ---------------------------------------------

# Columns that a refused request may still touch: the token's "last used" minute and the
# login time written when a persona's session is opened.
VOLATILE = {("identity_app.ApiToken", "last_used_at"), ("auth.User", "last_login")}
UNWATCHED = {"sessions.Session"}


@dataclass(frozen=True)
class Snapshot:
    rows: dict
    files: dict

    def changed(self, other: "Snapshot") -> list[str]:
        names = [label for label, rows in self.rows.items() if other.rows.get(label) != rows]
        files = sorted(set(self.files) ^ set(other.files))
        files += [name for name in self.files if name in other.files and self.files[name] != other.files[name]]
        return names + [f"file {name}" for name in sorted(set(files))]


@lru_cache(maxsize=1)
def _watched_tables() -> tuple[tuple[str, str], ...]:
    """(label, a SELECT of every row's compared columns in primary-key order) for each table."""
    quote = connection.ops.quote_name
    tables = []
    for model in apps.get_models(include_auto_created=True):
        label = model._meta.label
        if label in UNWATCHED or model._meta.proxy or not model._meta.managed:
            continue
        columns = [f.column for f in model._meta.concrete_fields if (label, f.attname) not in VOLATILE]
        sql = (
            f"SELECT {', '.join(map(quote, columns))} FROM {quote(model._meta.db_table)} "
            f"ORDER BY {quote(model._meta.pk.column)}"
        )
        tables.append((label, sql))
    return tuple(tables)


def snapshot() -> Snapshot:
    """Every row of every table (but sessions), read with plain SQL so that it stays cheap."""
    rows = {}
    with connection.cursor() as cursor:
        for label, sql in _watched_tables():
            cursor.execute(sql)
            rows[label] = cursor.fetchall()
    return Snapshot(rows, snapshot_files_only().files)


def restore_files(before: Snapshot) -> None:
    """Put the workspace back as it was: files are not part of the rolled-back transaction."""
    root = Path(settings.WORKSPACE_ROOT)
    for path in root.rglob("*"):
        name = str(path.relative_to(root))
        if path.is_file() and name not in before.files:
            path.unlink()
    for name, content in before.files.items():
        path = root / name
        if not path.exists() or path.read_bytes() != content:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(content)


@contextmanager
def rolled_back():
    """One case: whatever the request writes to the database is undone afterwards."""
    atomic = transaction.atomic()
    atomic._from_testcase = True
    with atomic:
        yield
        transaction.set_rollback(True)


# --- running one case ----------------------------------------------------------------------


@dataclass(frozen=True)
class Request:
    kind: str
    method: str
    url: str
    body: dict | None = None
    query: dict | None = None
    json_errors: bool = True


def send(client: Client, request: Request):
    call = getattr(client, request.method.lower())
    if request.kind == "api":
        if request.method == "GET":
            return call(request.url, request.query or {})
        return call(request.url, json.dumps(request.body or {}), content_type="application/json")
    if request.method in ("GET", "DELETE"):
        return call(request.url, request.query or {})
    if request.method == "POST":
        return call(request.url, request.body or {})
    return call(request.url, json.dumps(request.body or {}), content_type="application/json")


def run_case(world: World, persona: str, request: Request, expect: Expect) -> str | None:
    """Send ``request`` as ``persona``; a mismatch is described in one line, else None.

    Every case starts from the same rows and files (the world, alice's notes file), so a
    refused write is compared with one picture of them, taken at the first case."""
    if world.baseline is None:
        world.baseline = snapshot()
    with rolled_back():
        client = client_for(persona, world, request.kind)
        try:
            response = send(client, request)
        except Exception as exc:  # the test client re-raises what the view did not handle
            restore_files(world.baseline)
            return f"{persona:8} expected {expect.text:12} got an unhandled {type(exc).__name__}: {exc}"
        problems = _check_response(persona, request, expect, response)
        if request.method != "GET" and expect.refused:
            changed = world.baseline.changed(snapshot())
            if changed:
                problems.append(f"the refused {request.method} changed {', '.join(changed)}")
        restore_files(world.baseline)
    if problems:
        return f"{persona:8} expected {expect.text:12} got {response.status_code}: " + "; ".join(problems)
    return None


def snapshot_files_only() -> Snapshot:
    root = Path(settings.WORKSPACE_ROOT)
    return Snapshot({}, {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*") if p.is_file()})


def _check_response(persona: str, request: Request, expect: Expect, response) -> list[str]:
    problems = []
    body = response.content.decode("utf-8", errors="replace") if not getattr(response, "streaming", False) else ""
    if response.status_code != expect.status:
        problems.append(_describe(body))
    elif expect.login_url() is not None:
        location = response.headers.get("Location", "")
        if not location.startswith(expect.login_url()):
            problems.append(f"redirects to {location!r}, not to the login page")
    if request.json_errors and request.kind == "api" and response.status_code >= 400:
        try:
            error = response.json()["error"]
        except (ValueError, KeyError, TypeError):
            problems.append(f"not the JSON error shape: {body[:120]!r}")
        else:
            if expect.code and error.get("code") != expect.code:
                problems.append(f"error code {error.get('code')!r}, not {expect.code!r}")
    leaked = [kind for kind, word in MARKERS.items() if word in body and kind not in MAY_READ.get(persona, set())]
    if leaked:
        problems.append(f"the response shows alice's {', '.join(leaked)} data")
    return problems


def _describe(body: str) -> str:
    """The error's code and message, else the start of the body's text."""
    try:
        error = json.loads(body)["error"]
        return f"{error['code']}: {error['message']}"
    except (ValueError, KeyError, TypeError):
        return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", body))[:160].strip()
