"""Every route of the URL configuration has an authorization case for every kind of caller.

The tables below give, per route and method, the status each persona must get; the tests
walk ``config.urls`` and fail when a route has no row (a new route cannot be forgotten) or a
row names a route that no longer exists. Each case runs in a savepoint that is rolled back, so
all cases see the same world, built once for the module (``tests/route_matrix.py``): alice
owns every row; her project Apollo has bob as a member and vera as a viewer.

Personas (columns):

- ``anon`` no credentials; ``forged`` a made-up ``Token`` key; ``frun`` a made-up ``Run`` token
  for alice's real run id and lease generation;
- ``sub`` the ``Run`` token of a sub-agent run whose parent is alice's main run (the URL's run
  unless the target is ``sub``: then the sub-agent's own run); ``main`` the token of that
  main run;
- ``alice`` the owner; ``bob`` another user (a member of Apollo, nothing of alice's own);
  ``mallory`` a non-member of Apollo; ``vera`` a viewer of Apollo; ``svc`` a service principal
  (all with API tokens on ``/api/``, with a session on the web pages and the admin);
- API only: ``lsvc`` the service principal's token limited to bob, for which alice and all that
  is hers must look as if they did not exist (404; ``unknown_user`` when named in a body);
- admin only: ``staff`` (staff, no permissions) and ``root`` (a superuser).

Cells: a status, ``login`` (302 to the web login page), ``admin-login`` (302 to the admin's
login page) or ``-`` (not run: a positive admin write); ``API_CODES`` adds the error code
where the status alone does not tell which rule refused.

The rules: unauthenticated or forged → 401 on the API and the login page on the web and the
admin; another user's object or a project you are not in → 404; a viewer's write → 403; a
capability the caller lacks for every object alike (service-only writes) → 403; a run token
acts only for its own run (403 ``run_not_authorized``) and authenticates nothing else (401).
Every response is also checked for words of alice's rows the persona may not read, and every
refused write for leaving all rows and workspace files as they were. The admin is covered per
ModelAdmin (changelist, add, change, delete, history) rather than per URL.
"""

import json
from collections.abc import Callable
from dataclasses import dataclass

import pytest
from django.contrib import admin
from django.contrib.admin.utils import quote
from django.contrib.contenttypes.models import ContentType
from django.core.cache import cache
from django.test import RequestFactory, override_settings
from django.urls import reverse
from drf_spectacular.generators import SchemaGenerator

from identity_app.models import Project
from tests.route_matrix import (
    ADMIN_PERSONAS,
    API_PERSONAS,
    CHAT_KEY,
    GROUP_KEY,
    LANE_KEY,
    MARKERS,
    MODEL_ADMIN_VIEWS,
    PERSONAS,
    Expect,
    Request,
    World,
    build_world,
    parse_table,
    routes,
    run_case,
    world_transaction,
    write_notes_file,
)

pytestmark = pytest.mark.django_db

# --- the API -------------------------------------------------------------------------------

# The mem0-compatible API, under /api/mem0/ (``mem0``) and at the site root (``mem0-root``): a
# user's own memories, for the user's own key or a service acting for them; API keys only (a
# run token is no credential here); another user named is 404, as one that does not exist.
MEM0_ROWS = """
{ns}:mem0-ping             GET    -       401  401    401  401 401  200   200 200     200  200 200
{ns}:mem0-add              POST   -       401  401    401  401 401  200   404 404     404  200 404
{ns}:mem0-list             POST   -       401  401    401  401 401  200   404 404     404  200 404
{ns}:mem0-search           POST   -       401  401    401  401 401  200   404 404     404  200 404
{ns}:mem0-delete-all       DELETE -       401  401    401  401 401  200   404 404     404  200 404
{ns}:mem0-delete-all       GET    -       401  401    401  401 401  200   404 404     404  200 404
{ns}:mem0-delete-all       POST   add     401  401    401  401 401  200   404 404     404  200 404
{ns}:mem0-list-v2          POST   -       401  401    401  401 401  200   404 404     404  200 404
{ns}:mem0-search-v1        POST   -       401  401    401  401 401  200   404 404     404  200 404
{ns}:mem0-search-v2        POST   -       401  401    401  401 401  200   404 404     404  200 404
{ns}:mem0-memory           GET    -       401  401    401  401 401  200   404 404     404  200 404
{ns}:mem0-memory           PUT    -       401  401    401  401 401  200   404 404     404  200 404
{ns}:mem0-memory           DELETE -       401  401    401  401 401  200   404 404     404  200 404
{ns}:mem0-history          GET    -       401  401    401  401 401  200   404 404     404  200 404
{ns}:mem0-entities         GET    -       401  401    401  401 401  200   200 200     200  200 200
{ns}:mem0-entity           DELETE -       401  401    401  401 401  200   404 404     404  200 404
{ns}:mem0-batch            PUT    -       401  401    401  401 401  200   404 404     404  200 404
{ns}:mem0-batch            DELETE -       401  401    401  401 401  200   404 404     404  200 404
{ns}:mem0-unsupported-v1   GET    -       401  401    401  401 401  400   400 400     400  400 400
{ns}:mem0-unsupported-v1   POST   -       401  401    401  401 401  400   400 400     400  400 400
{ns}:mem0-unsupported-v1   PUT    -       401  401    401  401 401  400   400 400     400  400 400
{ns}:mem0-unsupported-v1   PATCH  -       401  401    401  401 401  400   400 400     400  400 400
{ns}:mem0-unsupported-v1   DELETE -       401  401    401  401 401  400   400 400     400  400 400
{ns}:mem0-unsupported-v2   GET    -       401  401    401  401 401  400   400 400     400  400 400
{ns}:mem0-unsupported-v2   POST   -       401  401    401  401 401  400   400 400     400  400 400
{ns}:mem0-unsupported-v2   PUT    -       401  401    401  401 401  400   400 400     400  400 400
{ns}:mem0-unsupported-v2   PATCH  -       401  401    401  401 401  400   400 400     400  400 400
{ns}:mem0-unsupported-v2   DELETE -       401  401    401  401 401  400   400 400     400  400 400
{ns}:mem0-unsupported-orgs GET    -       401  401    401  401 401  400   400 400     400  400 400
{ns}:mem0-unsupported-orgs POST   -       401  401    401  401 401  400   400 400     400  400 400
{ns}:mem0-unsupported-orgs PUT    -       401  401    401  401 401  400   400 400     400  400 400
{ns}:mem0-unsupported-orgs PATCH  -       401  401    401  401 401  400   400 400     400  400 400
{ns}:mem0-unsupported-orgs DELETE -       401  401    401  401 401  400   400 400     400  400 400
"""
MEM0_NAMESPACES = ("mem0", "mem0-root")

API = parse_table(
    """
route                     method target  anon forged frun sub main alice bob mallory vera svc lsvc
profile                   GET    -       401  401    401  401 401  200   200 200     200  200 200
profile                   PUT    -       401  401    401  401 401  200   200 200     200  200 200
project-list              GET    -       401  401    401  401 401  200   200 200     200  200 200
project-list              POST   -       401  401    401  401 401  201   201 201     201  201 201
project-detail            GET    -       401  401    401  401 401  200   200 404     200  404 404
project-detail            PUT    -       401  401    401  401 401  200   403 404     403  404 404
project-detail            PATCH  -       401  401    401  401 401  200   403 404     403  404 404
project-members           GET    -       401  401    401  401 401  200   200 404     200  404 404
project-member-detail     PUT    -       401  401    401  401 401  200   403 404     403  404 404
project-member-detail     PATCH  -       401  401    401  401 401  200   403 404     403  404 404
project-member-detail     DELETE -       401  401    401  401 401  204   403 404     403  404 404
# adding a member invites them (202, whether or not the username exists); the invitee alone
# sees, accepts or declines the invitation (here: alice invited mallory)
project-members           POST   -       401  401    401  401 401  202   403 404     403  404 404
project-invitations       GET    -       401  401    401  401 401  200   403 404     403  404 404
project-invitation-detail DELETE -       401  401    401  401 401  204   403 404     403  404 404
my-invitations            GET    -       401  401    401  401 401  200   200 200     200  200 200
my-invitation-accept      POST   -       401  401    401  401 401  404   404 201     404  404 404
my-invitation-decline     POST   -       401  401    401  401 401  404   404 204     404  404 404
# API tokens: each user's own (the target is alice's token)
my-tokens                 GET    -       401  401    401  401 401  200   200 200     200  200 200
my-tokens                 POST   -       401  401    401  401 401  201   201 201     201  201 403
my-token-detail           GET    -       401  401    401  401 401  200   404 404     404  404 404
my-token-detail           DELETE -       401  401    401  401 401  204   404 404     404  404 404
my-token-rotate           POST   -       401  401    401  401 401  201   404 404     404  404 404
my-memories               GET    -       401  401    401  401 401  200   200 200     200  200 200
my-memories               POST   -       401  401    401  401 401  201   201 201     201  201 201
my-memory-detail          GET    -       401  401    401  401 401  200   404 404     404  404 404
my-memory-detail          DELETE -       401  401    401  401 401  204   404 404     404  404 404
# a change in place (pause, expiry): the same rule as correcting
my-memory-detail          PATCH  -       401  401    401  401 401  200   404 404     404  404 404
my-memory-supersede       POST   -       401  401    401  401 401  201   404 404     404  404 404
my-memory-chain           GET    -       401  401    401  401 401  200   404 404     404  404 404
identity-context          GET    -       401  401    401  401 401  200   200 200     200  200 200
identity-context          GET    project 401  401    401  401 401  200   200 404     200  404 404
project-memories          GET    -       401  401    401  401 401  200   200 404     200  404 404
project-memories          POST   -       401  401    401  401 401  201   201 404     403  404 404
project-memory-detail     GET    -       401  401    401  401 401  200   200 404     200  404 404
project-memory-detail     DELETE -       401  401    401  401 401  204   204 404     403  404 404
project-memory-detail     PATCH  -       401  401    401  401 401  200   200 404     403  404 404
project-memory-supersede  POST   -       401  401    401  401 401  201   201 404     403  404 404
project-memory-chain      GET    -       401  401    401  401 401  200   200 404     200  404 404
my-settings               GET    -       401  401    401  401 401  200   200 200     200  200 200
my-settings               PUT    -       401  401    401  401 401  200   200 200     200  200 200
my-workspace-file         GET    -       401  401    401  401 401  200   200 200     200  200 200
my-workspace-file         PUT    -       401  401    401  401 401  200   200 200     200  200 200
my-workspace-file         DELETE -       401  401    401  401 401  204   204 204     204  204 204
# the notes files' change history: each user's own (the target is alice's change)
my-workspace-history      GET    -       401  401    401  401 401  200   200 200     200  200 200
my-workspace-history      DELETE -       401  401    401  401 401  200   200 200     200  200 200
my-workspace-change       GET    -       401  401    401  401 401  200   404 404     404  404 404
my-workspace-change-undo  POST   -       401  401    401  401 401  200   404 404     404  404 404
# conversations and runs: written by service principals for a user; a user reads their own
conversations             GET    -       401  401    401  401 401  200   200 200     200  200 200
conversations             POST   -       401  401    401  401 401  403   403 403     403  201 404
# a conversation's session_key goes through the chat reach rule (the caller's reach, working
# for the conversation's user): alice's chat for alice; her chat (or a lane of it) for bob; a
# group bound to nobody (out of every limited token's reach); a malformed key
conversations             POST   chat    401  401    401  401 401  403   403 403     403  201 404
conversations             POST   other   401  401    401  401 401  403   403 403     403  404 404
conversations             POST   lane    401  401    401  401 401  403   403 403     403  404 404
conversations             POST   unbound 401  401    401  401 401  403   403 403     403  201 404
conversations             POST   bad     401  401    401  401 401  403   403 403     403  400 400
conversation-detail       GET    -       401  401    401  401 401  200   404 404     404  200 404
conversation-detail       PATCH  -       401  401    401  401 401  200   404 404     404  200 404
# the key is set once, at creation: no one changes it afterwards
conversation-detail       PATCH  session 401  401    401  401 401  400   400 400     400  400 400
conversation-messages     GET    -       401  401    401  401 401  200   404 404     404  200 404
conversation-messages     POST   -       401  401    401  401 401  403   403 403     403  201 404
conversation-messages-batch POST -       401  401    401  401 401  403   403 403     403  201 404
conversation-message      GET    -       401  401    401  401 401  200   404 404     404  200 404
# forgetting messages: the conversation's owner, or a service principal within reach
conversation-messages     DELETE -       401  401    401  401 401  200   404 404     404  200 404
conversation-message      DELETE -       401  401    401  401 401  204   404 404     404  204 404
# a conversation found again by the runtime's own id (an Agents SDK session): created for alice
conversations             POST   session 401  401    401  401 401  403   403 403     403  201 404
runs                      GET    -       401  401    401  401 401  200   200 200     200  200 200
runs                      POST   -       401  401    401  401 401  403   403 403     403  201 404
run-detail                GET    -       401  401    401  401 401  200   404 404     404  200 404
run-claim                 POST   -       401  401    401  401 401  403   403 403     403  200 404
# bob's conversation in a group chat: the token limited to bob may not run in it (its run
# token would read the group's items), nor take over its run
runs                      POST   group   401  401    401  401 401  403   403 403     403  201 404
run-claim                 POST   group   401  401    401  401 401  403   403 403     403  200 404
# run-token routes: only the run's own token; a sub-agent never acts for its parent, nor a
# parent for its sub-agent; memory tools are for top-level runs only
run-heartbeat             POST   -       401  401    401  403 200  401   401 401     401  401 401
run-heartbeat             POST   sub     401  401    401  200 403  401   401 401     401  401 401
run-finish                POST   -       401  401    401  403 200  401   401 401     401  401 401
run-finish                POST   sub     401  401    401  200 403  401   401 401     401  401 401
run-context               GET    -       401  401    401  403 200  401   401 401     401  401 401
run-context               GET    sub     401  401    401  200 403  401   401 401     401  401 401
run-tool                  POST   -       401  401    401  403 200  401   401 401     401  401 401
run-tool                  POST   sub     401  401    401  403 403  401   401 401     401  401 401
# auto-memory
auto-memory-settings      GET    -       401  401    401  401 401  200   200 200     200  200 200
auto-memory-settings      PUT    -       401  401    401  401 401  200   200 200     200  200 200
memory-switches           GET    -       401  401    401  401 401  200   200 200     200  200 200
memory-switches           PUT    -       401  401    401  401 401  200   200 200     200  200 200
run-auto-memory-flags     POST   -       401  401    401  401 401  200   404 404     404  404 404
# the on-demand round is a background job (202 + status URL); a job is its owner's alone
auto-memory-run           POST   -       401  401    401  401 401  202   202 202     202  202 202
job-detail                GET    -       401  401    401  401 401  200   404 404     404  404 404
# jobs of the service principal: one queued by its unlimited token, one by its limited token;
# a limited token sees only the jobs it queued itself
job-detail                GET    svc     401  401    401  401 401  404   404 404     404  200 404
job-detail                GET    lsvc    401  401    401  401 401  404   404 404     404  200 200
auto-memory-log           GET    -       401  401    401  401 401  200   200 200     200  200 200
# scoped items: bots write; a user searches only the chats bound to them. Every chat out of
# the caller's reach is 404, bound to someone or not, so the answer reveals nothing; a lane of
# a chat is that chat, and a group bound to nobody is out of every limited token's reach
memory-items              POST   -       401  401    401  401 401  403   403 403     403  201 404
memory-items              POST   lane    401  401    401  401 401  403   403 403     403  201 404
# a chat item changed in place: services within reach, the user the chat is bound to; an id
# that is no chat/global item (alice's own memory) is 404 for everyone
memory-item-detail        PATCH  -       401  401    401  401 401  200   404 404     404  200 404
memory-item-detail        PATCH  user    401  401    401  401 401  404   404 404     404  404 404
memory-search             POST   -       401  401    401  401 401  200   404 404     404  200 404
memory-search             POST   lane    401  401    401  401 401  200   404 404     404  200 404
memory-search             POST   unbound 401  401    401  401 401  404   404 404     404  200 404
memory-consolidate        POST   -       401  401    401  401 401  403   403 403     403  200 404
memory-consolidate        POST   lane    401  401    401  401 401  403   403 403     403  200 404
memory-dream              POST   -       401  401    401  401 401  403   403 403     403  202 404
memory-dream              POST   lane    401  401    401  401 401  403   403 403     403  202 404
chat-bindings             GET    -       401  401    401  401 401  200   200 200     200  200 200
# binding widens reach: only an unlimited service principal (or staff allowed to) binds, so a
# limited token cannot bind a chat to a user in its reach and then read it
chat-bindings             POST   -       401  401    401  401 401  403   403 403     403  201 403
chat-bindings             POST   unbound 401  401    401  401 401  403   403 403     403  201 403
chat-binding-detail       DELETE -       401  401    401  401 401  204   404 404     404  204 404
# the memory home: everything about the caller; alice's items (her own, her chat's, Apollo's)
# are the targets; a chat not bound to the caller and a project they are not in are 404
memory-home               GET    -       401  401    401  401 401  200   200 200     200  200 200
memory-home-search        GET    -       401  401    401  401 401  200   200 200     200  200 200
memory-home-items         GET    -       401  401    401  401 401  200   200 200     200  200 200
memory-home-items         GET    chat    401  401    401  401 401  200   404 404     404  404 404
memory-home-items         GET    project 401  401    401  401 401  200   200 404     200  404 404
memory-home-reads         GET    -       401  401    401  401 401  200   200 200     200  200 200
memory-home-reads         GET    chat    401  401    401  401 401  200   404 404     404  404 404
memory-home-reads         GET    project 401  401    401  401 401  200   200 404     200  404 404
memory-home-item          GET    -       401  401    401  401 401  200   404 404     404  404 404
memory-home-item          GET    chat    401  401    401  401 401  200   404 404     404  404 404
memory-home-item          GET    project 401  401    401  401 401  200   200 404     200  404 404
memory-home-item          DELETE -       401  401    401  401 401  204   404 404     404  404 404
memory-home-item          DELETE chat    401  401    401  401 401  204   404 404     404  404 404
memory-home-item          DELETE project 401  401    401  401 401  204   204 404     403  404 404
memory-home-item          PATCH  -       401  401    401  401 401  200   404 404     404  404 404
memory-home-item          PATCH  chat    401  401    401  401 401  200   404 404     404  404 404
memory-home-item          PATCH  project 401  401    401  401 401  200   200 404     403  404 404
memory-home-correct       POST   -       401  401    401  401 401  201   404 404     404  404 404
memory-home-correct       POST   chat    401  401    401  401 401  201   404 404     404  404 404
memory-home-correct       POST   project 401  401    401  401 401  201   201 404     403  404 404
memory-home-forget        POST   -       401  401    401  401 401  200   404 404     404  404 404
memory-home-forget        POST   chat    401  401    401  401 401  200   404 404     404  404 404
memory-home-forget        POST   project 401  401    401  401 401  200   200 404     403  404 404
# forget everything: each caller's own sources; a wrong typed confirmation changes nothing
memory-home-forget-all    POST   -       401  401    401  401 401  200   200 200     200  200 200
memory-home-forget-all    POST   chat    401  401    401  401 401  200   404 404     404  404 404
memory-home-forget-all    POST   project 401  401    401  401 401  200   200 404     403  404 404
memory-home-forget-all    POST   typo    401  401    401  401 401  400   400 400     400  400 400
# undoing a forgotten chat (or forgetting it for good now): the user who forgot it alone
memory-home-forget-undo   POST   -       401  401    401  401 401  200   404 404     404  404 404
memory-home-forget-undo   DELETE -       401  401    401  401 401  204   404 404     404  404 404
my-export                 GET    -       401  401    401  401 401  200   200 200     200  200 200
my-export-markdown        GET    -       401  401    401  401 401  200   200 200     200  200 200
my-import                 POST   -       401  401    401  401 401  200   200 200     200  200 200
# the store (LangGraph): alice's own memory by its id in her namespace; a service acting for her
store-batch               POST   -       401  401    401  401 401  200   404 404     404  200 404
store-batch               POST   project 401  401    401  401 401  200   200 404     200  404 404
store-batch               POST   chat    401  401    401  401 401  200   404 404     404  200 404
store-batch               POST   put     401  401    401  401 401  200   404 404     404  200 404
{mem0}
# public: the schema and its docs page (a forged token is still refused)
schema                    GET    -       200  401    200  200 200  200   200 200     200  200 200
api-docs                  GET    -       200  401    200  200 200  200   200 200     200  200 200
""".replace("{mem0}", MEM0_ROWS.format(ns="mem0") + MEM0_ROWS.format(ns="mem0-root")),
    API_PERSONAS,
)

# Where the status alone does not tell which rule refused: the error code it must carry.
RUN_TOKEN_ROUTES = [("run-heartbeat", "POST"), ("run-finish", "POST"), ("run-context", "GET"), ("run-tool", "POST")]
API_CODES = {
    **{(route, method, "-", "sub"): "run_not_authorized" for route, method in RUN_TOKEN_ROUTES},
    **{(route, method, "sub", "main"): "run_not_authorized" for route, method in RUN_TOKEN_ROUTES},
    ("run-tool", "POST", "sub", "sub"): "not_top_level_run",
    ("conversations", "POST", "-", "alice"): "service_principal_required",
    **{("memory-search", "POST", target, "bob"): "not_found" for target in ("-", "lane", "unbound")},
    **{("memory-search", "POST", target, "lsvc"): "not_found" for target in ("-", "lane", "unbound")},
    **{("memory-items", "POST", target, "lsvc"): "not_found" for target in ("-", "lane")},
    **{("conversations", "POST", target, who): "not_found" for target in ("other", "lane") for who in ("svc", "lsvc")},
    ("conversations", "POST", "unbound", "lsvc"): "not_found",
    ("conversations", "POST", "chat", "lsvc"): "unknown_user",
    ("runs", "POST", "group", "lsvc"): "not_found",
    ("run-claim", "POST", "group", "lsvc"): "not_found",
    **{("conversations", "POST", "bad", who): "invalid_session_key" for who in ("svc", "lsvc")},
    **{("chat-bindings", "POST", target, "lsvc"): "token_limited" for target in ("-", "unbound")},
    ("conversations", "POST", "-", "lsvc"): "unknown_user",
    ("runs", "POST", "-", "lsvc"): "unknown_user",
    ("conversations", "POST", "session", "lsvc"): "unknown_user",
    **{("store-batch", "POST", target, "lsvc"): "unknown_user" for target in ("-", "put")},
    **{
        ("store-batch", "POST", target, who): "unknown_user"
        for target in ("-", "put")
        for who in ("bob", "mallory", "vera")
    },
    **{
        (f"{ns}:{route}", method, "-", who): "unknown_user"
        for ns in MEM0_NAMESPACES
        for route, method in (
            ("mem0-add", "POST"),
            ("mem0-list", "POST"),
            ("mem0-search", "POST"),
            ("mem0-delete-all", "DELETE"),
            ("mem0-delete-all", "GET"),
            ("mem0-list-v2", "POST"),
            ("mem0-search-v1", "POST"),
            ("mem0-search-v2", "POST"),
            ("mem0-entity", "DELETE"),
        )
        for who in ("bob", "mallory", "vera", "lsvc")
    },
    **{
        (f"{ns}:mem0-delete-all", "POST", "add", who): "unknown_user"
        for ns in MEM0_NAMESPACES
        for who in ("bob", "mallory", "vera", "lsvc")
    },
    **{
        (f"{ns}:mem0-unsupported-{what}", method, "-", who): "unsupported"
        for ns in MEM0_NAMESPACES
        for what in ("v1", "v2", "orgs")
        for method in ("GET", "POST", "PUT", "PATCH", "DELETE")
        for who in ("alice", "bob", "mallory", "vera", "svc", "lsvc")
    },
}
for (route, method, target, persona), code in API_CODES.items():
    API[route, method, target][persona] = Expect(f"{API[route, method, target][persona].text}:{code}")

# --- the web UI ----------------------------------------------------------------------------

WEB = parse_table(
    """
route                         method target anon  forged frun  sub   main  alice bob   mallory vera  svc
# probes and metrics: open to anyone (metrics need a bearer token, and none is set here)
healthz                       GET    -      200   200    200   200   200   200   200   200     200   200
readyz                        GET    -      200   200    200   200   200   200   200   200     200   200
metrics                       GET    -      404   404    404   404   404   404   404   404     404   404
login                         GET    -      200   200    200   200   200   200   200   200     200   200
login                         POST   -      200   200    200   200   200   200   200   200     200   200
login                         PUT    -      200   200    200   200   200   200   200   200     200   200
# first contact: a sign-in link's page is open to anyone; a made-up link signs no one in
sign_in_link                  GET    -      200   200    200   200   200   200   200   200     200   200
sign_in_link                  POST   -      404   404    404   404   404   404   404   404     404   404
# setting a password without the old one: only right after a sign-in link (or with none set)
set_password                  GET    -      login login  login login login 404   404   404     404   404
set_password                  POST   -      login login  login login login 404   404   404     404   404
# password reset by email (the tests send mail to memory); a made-up reset link is refused
password_reset                GET    -      200   200    200   200   200   200   200   200     200   200
password_reset                POST   -      302   302    302   302   302   302   302   302     302   302
password_reset                PUT    -      200   200    200   200   200   200   200   200     200   200
password_reset_done           GET    -      200   200    200   200   200   200   200   200     200   200
password_reset_confirm        GET    -      200   200    200   200   200   200   200   200     200   200
password_reset_confirm        POST   -      200   200    200   200   200   200   200   200     200   200
password_reset_confirm        PUT    -      200   200    200   200   200   200   200   200     200   200
password_reset_complete       GET    -      200   200    200   200   200   200   200   200     200   200
logout                        POST   -      login login  login login login login login login   login login
web:home                      GET    -      login login  login login login 200   200   200     200   200
# the old memory lists lead to the memory home's one list per source, for good (GET only)
web:my_memories               GET    -      login login  login login login 301   301   301     301   301
web:my_memory                 GET    -      login login  login login login 301   301   301     301   301
web:my_memory_correct         GET    -      login login  login login login 301   301   301     301   301
web:my_memory_forget          GET    -      login login  login login login 301   301   301     301   301
web:projects                  GET    -      login login  login login login 200   200   200     200   200
web:projects                  POST   -      login login  login login login 302   302   302     302   302
web:project_memories          GET    -      login login  login login login 301   301   301     301   301
web:project_memory            GET    -      login login  login login login 301   301   301     301   301
web:project_memory_correct    GET    -      login login  login login login 301   301   301     301   301
web:project_memory_forget     GET    -      login login  login login login 301   301   301     301   301
web:profile                   GET    -      login login  login login login 200   200   200     200   200
web:profile                   POST   -      login login  login login login 302   302   302     302   302
web:tokens                    GET    -      login login  login login login 200   200   200     200   200
web:tokens                    POST   -      login login  login login login 200   200   200     200   200
# revoking or rotating asks first (GET, or a POST without confirmed=yes); the confirmed POST acts
web:token_revoke              GET    -      login login  login login login 200   404   404     404   404
web:token_revoke              POST   -      login login  login login login 302   404   404     404   404
web:token_revoke              POST   ask    login login  login login login 200   404   404     404   404
web:token_rotate              GET    -      login login  login login login 200   404   404     404   404
web:token_rotate              POST   -      login login  login login login 200   404   404     404   404
# "Connect your agent": the snippets for anyone signed in; the button makes a key of one's own
web:connect                   GET    -      login login  login login login 200   200   200     200   200
web:connect                   POST   -      login login  login login login 200   200   200     200   200
web:invitations               GET    -      login login  login login login 200   200   200     200   200
web:invitation_accept         POST   -      login login  login login login 404   404   302     404   404
web:invitation_decline        POST   -      login login  login login login 404   404   302     404   404
web:project_members           GET    -      login login  login login login 200   200   404     200   404
web:project_members           POST   -      login login  login login login 302   403   404     403   404
web:project_invitation_cancel POST   -      login login  login login login 302   403   404     403   404
web:workspace                 GET    -      login login  login login login 200   200   200     200   200
web:workspace                 POST   -      login login  login login login 302   302   302     302   302
web:set_language              POST   -      302   302    302   302   302   302   302   302     302   302
web:workspace_history         GET    -      login login  login login login 200   200   200     200   200
web:workspace_history_clear   POST   -      login login  login login login 302   302   302     302   302
web:workspace_change_undo     POST   -      login login  login login login 302   404   404     404   404
web:settings                  GET    -      login login  login login login 200   200   200     200   200
web:settings                  POST   -      login login  login login login 302   302   302     302   302
web:conversations             GET    -      login login  login login login 200   200   200     200   200
web:conversation_detail       GET    -      login login  login login login 200   404   404     404   200
web:conversation_memory       POST   -      login login  login login login 302   404   404     404   302
web:run_detail                GET    -      login login  login login login 200   404   404     404   200
web:auto_memory_settings      GET    -      login login  login login login 200   200   200     200   200
web:auto_memory_settings      POST   -      login login  login login login 302   302   302     302   302
web:auto_memory_log           GET    -      login login  login login login 200   200   200     200   200
web:run_auto_memory_flags     GET    -      login login  login login login 200   404   404     404   404
web:run_auto_memory_flags     POST   -      login login  login login login 302   404   404     404   404
web:chat_memories             GET    -      login login  login login login 200   200   200     200   200
# renaming a chat: alice's own chat; another user's is the same 404 as a chat that does not exist
web:chat_memories             POST   -      login login  login login login 302   404   404     404   404
web:home                      GET    search login login  login login login 200   200   200     200   200
web:memory_home_items         GET    -      login login  login login login 200   200   200     200   200
web:memory_home_items         GET    chat   login login  login login login 200   404   404     404   404
web:memory_home_items         GET    project login login login login login 200   200   404     200   404
web:memory_home_reads         GET    -      login login  login login login 200   200   200     200   200
web:memory_home_reads         GET    chat   login login  login login login 200   404   404     404   404
web:memory_home_reads         GET    project login login login login login 200   200   404     200   404
# the add form: own memories, and a project for those whose role may write there
web:memory_home_items         POST   -      login login  login login login 302   302   302     302   302
web:memory_home_items         POST   project login login login login login 302   302   404     403   404
web:memory_home_items         POST   chat   login login  login login login 400   404   404     404   404
web:memory_home_item          GET    -      login login  login login login 200   404   404     404   404
web:memory_home_item          GET    chat   login login  login login login 200   404   404     404   404
web:memory_home_item          GET    project login login login login login 200   200   404     200   404
web:memory_home_item_correct  GET    -      login login  login login login 200   404   404     404   404
web:memory_home_item_correct  GET    project login login login login login 200   200   404     403   404
web:memory_home_item_correct  POST   -      login login  login login login 302   404   404     404   404
web:memory_home_item_correct  POST   chat   login login  login login login 302   404   404     404   404
web:memory_home_item_correct  POST   project login login login login login 302   302   404     403   404
# pause, resume, a new expiry: in place, the rule of correcting
web:memory_home_item_change   GET    -      login login  login login login 200   404   404     404   404
web:memory_home_item_change   GET    project login login login login login 200   200   404     403   404
web:memory_home_item_change   POST   -      login login  login login login 302   404   404     404   404
web:memory_home_item_change   POST   chat   login login  login login login 302   404   404     404   404
web:memory_home_item_change   POST   project login login login login login 302   302   404     403   404
web:memory_home_item_forget   GET    -      login login  login login login 200   404   404     404   404
web:memory_home_item_forget   GET    project login login login login login 200   200   404     403   404
web:memory_home_item_forget   POST   -      login login  login login login 302   404   404     404   404
web:memory_home_item_forget   POST   chat   login login  login login login 302   404   404     404   404
web:memory_home_item_forget   POST   project login login login login login 302   302   404     403   404
# bulk forget: the first POST shows the selection (changes nothing), the confirmed one forgets
web:memory_home_forget_selected POST -      login login  login login login 302   404   404     404   404
web:memory_home_forget_selected POST preview login login login login login 200   404   404     404   404
web:memory_home_forget_selected POST chat   login login  login login login 302   404   404     404   404
web:memory_home_forget_selected POST project login login login login login 302  302   404     403   404
web:memory_home_forget_all    GET    -      login login  login login login 200   200   200     200   200
web:memory_home_forget_all    GET    chat   login login  login login login 200   404   404     404   404
web:memory_home_forget_all    GET    project login login login login login 200   200   404     403   404
web:memory_home_forget_all    POST   -      login login  login login login 302   302   302     302   302
web:memory_home_forget_all    POST   chat   login login  login login login 302   404   404     404   404
web:memory_home_forget_all    POST   project login login login login login 302   302   404     403   404
web:memory_home_forget_all    POST   typo   login login  login login login 400   400   400     400   400
web:memory_home_forget_undo   GET    -      login login  login login login 200   404   404     404   404
web:memory_home_forget_undo   POST   -      login login  login login login 302   404   404     404   404
web:memory_home_export        GET    -      login login  login login login 200   200   200     200   200
web:memory_home_import        GET    -      login login  login login login 200   200   200     200   200
web:memory_home_import        POST   -      login login  login login login 200   200   200     200   200
""",
    PERSONAS,
)

# --- the admin: the site's own pages and custom views (ModelAdmins are covered generically) --

_NOT_STAFF = "admin-login " * len(PERSONAS)
ADMIN = parse_table(
    f"""
route                                     method target {" ".join(ADMIN_PERSONAS)}
admin:index                               GET    -      {_NOT_STAFF} 200 200
admin:login                               GET    -      200 200 200 200 200 200 200 200 200 200 302 302
admin:login                               POST   -      200 200 200 200 200 200 200 200 200 200 200 200
admin:logout                              POST   -      302 302 302 302 302 302 302 302 302 302 302 302
admin:password_change                     GET    -      {_NOT_STAFF} 200 200
admin:password_change                     POST   -      {_NOT_STAFF} 200 200
admin:password_change_done                GET    -      {_NOT_STAFF} 200 200
admin:autocomplete                        GET    -      {_NOT_STAFF} 403 403
admin:jsi18n                              GET    -      {_NOT_STAFF} 200 200
admin:view_on_site                        GET    -      {_NOT_STAFF} 404 404
admin:app_list                            GET    -      {_NOT_STAFF} 404 200
admin/(?P<url>.*)                         GET    -      {_NOT_STAFF} 404 404
admin:auth_user_password_change           GET    -      {_NOT_STAFF} 403 200
admin:auth_user_password_change           POST   -      {_NOT_STAFF} 403 200
admin:memory_app_scopemigrationplan_import  GET  -      {_NOT_STAFF} 403 200
admin:memory_app_scopemigrationplan_import  POST -      {_NOT_STAFF} 403 200
admin:memory_app_scopemigrationplan_inspect GET  -      {_NOT_STAFF} 403 302
admin:memory_app_scopemigrationplan_inspect POST -      {_NOT_STAFF} 403 302
admin:memory_app_scopemigrationplan_apply   GET  -      {_NOT_STAFF} 403 200
admin:memory_app_scopemigrationplan_apply   POST -      {_NOT_STAFF} 403 200
# what approving a candidate will do: shown to reviewers only (an unconfirmed POST shows it again)
admin:memory_app_memorycandidate_review     GET  -      {_NOT_STAFF} 403 200
admin:memory_app_memorycandidate_review     POST -      {_NOT_STAFF} 403 200
""",
    ADMIN_PERSONAS,
)
# Admin views answer GET and treat any other method as a submission: POST stands for them.
ADMIN_METHODS = ("GET", "POST")

# --- where each route points: alice's rows ----------------------------------------------------


@dataclass(frozen=True)
class Target:
    kwargs: Callable[[World], dict] = lambda w: {}
    query: Callable[[World], dict] = lambda w: {}
    url: Callable[[World], str] | None = None  # for unnamed routes
    body: Callable[[World], dict] | None = None  # instead of the route's entry in BODIES


def _project(w):
    return {"project_id": w.project.pk}


# Routes of one item of the memory home, aimed at alice's own memory, her chat's item and
# Apollo's memory.
HOME_ITEM_ROUTES = (
    "memory-home-item",
    "memory-home-correct",
    "web:memory_home_item",
    "web:memory_home_item_correct",
    "web:memory_home_item_forget",
    "web:memory_home_item_change",
)
FORGET_ALL_ROUTES = ("memory-home-forget-all", "web:memory_home_forget_all")


def _user_item(w):
    return {"memory_id": w.user_memory.pk}


def _chat_item(w):
    return {"memory_id": w.chat_item.pk}


def _project_item(w):
    return {"memory_id": w.project_memory.pk}


def _forget_all(source: str, confirm: str = "FORGET"):
    return lambda w: {"source": source, "confirm": confirm}


class _Rereadable:
    """An uploaded file for the test client that reads whole every time (one request per
    persona is built from the same body)."""

    def __init__(self, name: str, content: bytes):
        self.name, self.content = name, content

    def read(self, *args):
        return self.content


def _export_file(w) -> dict:
    return {
        "format": "memory-service-export",
        "version": 1,
        "memories": {"user": [{"kind": "fact", "content": "Keeps a logbook of every trip"}]},
    }


def _main_run(w):
    return {"run_id": w.main_run.pk}


def _sub_run(w):
    return {"run_id": w.sub_run.pk}


MEM0_UNSUPPORTED_URLS = {"v1": "v1/exports/", "v2": "v2/profiles/settings/", "orgs": "api/v1/orgs/organizations/x/"}


def _mem0_prefix(ns: str) -> str:
    return "/api/mem0/" if ns == "mem0" else "/"


def _store_ops(op: dict) -> Callable[[World], dict]:
    def built(w: World, value):
        if callable(value):
            return value(w)
        if isinstance(value, list):
            return [built(w, item) for item in value]
        return value

    return lambda w: {"ops": [{key: built(w, value) for key, value in op.items()}]}


TARGETS: dict[tuple[str, str], Target] = {
    **{(f"{ns}:mem0-memory", "-"): Target(_user_item) for ns in MEM0_NAMESPACES},
    **{(f"{ns}:mem0-history", "-"): Target(_user_item) for ns in MEM0_NAMESPACES},
    **{
        (f"{ns}:mem0-entity", "-"): Target(lambda w: {"entity_type": "user", "name": "alice"}) for ns in MEM0_NAMESPACES
    },
    **{
        (f"{ns}:mem0-delete-all", "-"): Target(url=lambda w, ns=ns: _mem0_prefix(ns) + "v1/memories/?user_id=alice")
        for ns in MEM0_NAMESPACES
    },
    **{
        (f"{ns}:mem0-delete-all", "add"): Target(url=lambda w, ns=ns: _mem0_prefix(ns) + "v1/memories/")
        for ns in MEM0_NAMESPACES
    },
    **{
        (f"{ns}:mem0-unsupported-{what}", "-"): Target(url=lambda w, ns=ns, url=url: _mem0_prefix(ns) + url)
        for ns in MEM0_NAMESPACES
        for what, url in MEM0_UNSUPPORTED_URLS.items()
    },
    ("store-batch", "-"): Target(
        body=_store_ops({"op": "get", "namespace": ["users", "alice"], "key": lambda w: w.user_memory.pk})
    ),
    ("store-batch", "project"): Target(
        body=_store_ops(
            {"op": "get", "namespace": ["projects", lambda w: w.project.pk], "key": lambda w: w.project_memory.pk}
        )
    ),
    ("store-batch", "chat"): Target(
        body=_store_ops({"op": "search", "namespace_prefix": ["chats", CHAT_KEY], "query": "allergic"})
    ),
    ("store-batch", "put"): Target(
        body=_store_ops(
            {
                "op": "put",
                "namespace": ["users", "alice", "prefs"],
                "key": "tea",
                "value": {"content": "Likes green tea"},
            }
        )
    ),
    ("conversations", "session"): Target(body=lambda w: {"user": "alice", "title": "new", "external_id": "session-1"}),
    **{(route, "chat"): Target(_chat_item) for route in HOME_ITEM_ROUTES},
    **{(route, "project"): Target(_project_item) for route in HOME_ITEM_ROUTES},
    **{(route, "-"): Target(_user_item) for route in HOME_ITEM_ROUTES},
    # Words of alice's items, not their markers: a response shows a marker only if an item leaks.
    ("memory-home-search", "-"): Target(query=lambda w: {"q": "allergic plush releases"}),
    ("web:home", "search"): Target(query=lambda w: {"q": "allergic plush releases"}),
    ("memory-home-items", "-"): Target(query=lambda w: {"source": "user", "status": "all"}),
    ("memory-home-items", "chat"): Target(query=lambda w: {"source": f"chat:{CHAT_KEY}"}),
    ("memory-home-items", "project"): Target(query=lambda w: {"source": f"project:{w.project.pk}"}),
    ("memory-home-reads", "-"): Target(query=lambda w: {"source": "user"}),
    ("memory-home-reads", "chat"): Target(query=lambda w: {"source": f"chat:{CHAT_KEY}"}),
    ("memory-home-reads", "project"): Target(query=lambda w: {"source": f"project:{w.project.pk}"}),
    ("web:memory_home_reads", "-"): Target(query=lambda w: {"source": "user"}),
    ("web:memory_home_reads", "chat"): Target(query=lambda w: {"source": f"chat:{CHAT_KEY}"}),
    ("web:memory_home_reads", "project"): Target(query=lambda w: {"source": f"project:{w.project.pk}"}),
    # GET lists (the query), POST adds (the form names its source too)
    ("web:memory_home_items", "-"): Target(
        query=lambda w: {"source": "user", "status": "all"},
        body={"source": "user", "kind": "fact", "content": "I drink tea"},
    ),
    ("web:memory_home_items", "chat"): Target(
        query=lambda w: {"source": f"chat:{CHAT_KEY}"},
        body={"source": f"chat:{CHAT_KEY}", "kind": "fact", "content": "I drink tea"},
    ),
    ("web:memory_home_items", "project"): Target(
        query=lambda w: {"source": f"project:{w.project.pk}"},
        body=lambda w: {"source": f"project:{w.project.pk}", "kind": "decision", "content": "We ship on Fridays"},
    ),
    ("memory-home-forget", "-"): Target(body=lambda w: {"ids": [w.user_memory.pk]}),
    ("memory-home-forget", "chat"): Target(body=lambda w: {"ids": [w.chat_item.pk]}),
    ("memory-home-forget", "project"): Target(body=lambda w: {"ids": [w.project_memory.pk]}),
    ("web:memory_home_forget_selected", "-"): Target(body=lambda w: {"ids": [w.user_memory.pk], "confirmed": "yes"}),
    ("web:memory_home_forget_selected", "preview"): Target(body=lambda w: {"ids": [w.user_memory.pk]}),
    ("web:memory_home_forget_selected", "chat"): Target(body=lambda w: {"ids": [w.chat_item.pk], "confirmed": "yes"}),
    ("web:memory_home_forget_selected", "project"): Target(
        body=lambda w: {"ids": [w.project_memory.pk], "confirmed": "yes"}
    ),
    **{(route, "-"): Target(body=_forget_all("all")) for route in FORGET_ALL_ROUTES},
    **{(route, "chat"): Target(body=_forget_all(f"chat:{CHAT_KEY}")) for route in FORGET_ALL_ROUTES},
    **{
        (route, "project"): Target(body=lambda w: _forget_all(f"project:{w.project.pk}")(w))
        for route in FORGET_ALL_ROUTES
    },
    **{(route, "typo"): Target(body=_forget_all("all", confirm="forget")) for route in FORGET_ALL_ROUTES},
    ("web:memory_home_forget_all", "chat"): Target(
        query=lambda w: {"source": f"chat:{CHAT_KEY}"}, body=_forget_all(f"chat:{CHAT_KEY}")
    ),
    ("web:memory_home_forget_all", "project"): Target(
        query=lambda w: {"source": f"project:{w.project.pk}"}, body=lambda w: _forget_all(f"project:{w.project.pk}")(w)
    ),
    ("project-detail", "-"): Target(_project),
    ("project-members", "-"): Target(_project),
    ("project-member-detail", "-"): Target(lambda w: {**_project(w), "user_id": w.users["bob"].pk}),
    ("my-memory-detail", "-"): Target(lambda w: {"memory_id": w.user_memory.pk}),
    ("memory-home-forget-undo", "-"): Target(lambda w: {"undo_id": w.undo.pk}),
    ("web:memory_home_forget_undo", "-"): Target(lambda w: {"undo_id": w.undo.pk}, body={"action": "undo"}),
    ("memory-item-detail", "-"): Target(_chat_item),
    ("memory-item-detail", "user"): Target(_user_item),
    ("my-memory-supersede", "-"): Target(lambda w: {"memory_id": w.user_memory.pk}),
    ("my-memory-chain", "-"): Target(lambda w: {"memory_id": w.user_memory.pk}),
    ("identity-context", "project"): Target(query=lambda w: {"project_id": w.project.pk}),
    ("project-memories", "-"): Target(_project),
    ("project-memory-detail", "-"): Target(lambda w: {**_project(w), "memory_id": w.project_memory.pk}),
    ("project-memory-supersede", "-"): Target(lambda w: {**_project(w), "memory_id": w.project_memory.pk}),
    ("project-memory-chain", "-"): Target(lambda w: {**_project(w), "memory_id": w.project_memory.pk}),
    ("my-workspace-file", "-"): Target(lambda w: {"name": "MEMORY.md"}),
    ("my-workspace-change", "-"): Target(lambda w: {"change_id": w.notes_change.pk}),
    ("my-workspace-change-undo", "-"): Target(lambda w: {"change_id": w.notes_change.pk}),
    ("web:workspace_change_undo", "-"): Target(lambda w: {"change_id": w.notes_change.pk}),
    ("project-invitations", "-"): Target(_project),
    ("project-invitation-detail", "-"): Target(lambda w: {**_project(w), "invitation_id": w.invitation.pk}),
    ("my-invitation-accept", "-"): Target(lambda w: {"invitation_id": w.invitation.pk}),
    ("my-invitation-decline", "-"): Target(lambda w: {"invitation_id": w.invitation.pk}),
    ("my-token-detail", "-"): Target(lambda w: {"token_id": w.alice_token.pk}),
    ("my-token-rotate", "-"): Target(lambda w: {"token_id": w.alice_token.pk}),
    ("web:token_revoke", "-"): Target(lambda w: {"token_id": w.alice_token.pk}, body={"confirmed": "yes"}),
    ("web:token_revoke", "ask"): Target(lambda w: {"token_id": w.alice_token.pk}, body={}),
    ("web:token_rotate", "-"): Target(lambda w: {"token_id": w.alice_token.pk}, body={"confirmed": "yes"}),
    ("sign_in_link", "-"): Target(lambda w: {"secret": "made-up-secret-0123456789abcdef"}),
    ("password_reset_confirm", "-"): Target(lambda w: {"uidb64": "MQ", "token": "made-up-token"}),
    ("web:invitation_accept", "-"): Target(lambda w: {"invitation_id": w.invitation.pk}),
    ("web:invitation_decline", "-"): Target(lambda w: {"invitation_id": w.invitation.pk}),
    ("web:project_members", "-"): Target(_project),
    ("web:project_invitation_cancel", "-"): Target(lambda w: {**_project(w), "invitation_id": w.invitation.pk}),
    ("conversation-detail", "-"): Target(lambda w: {"conversation_id": w.conversation.pk}),
    ("conversation-messages", "-"): Target(lambda w: {"conversation_id": w.conversation.pk}),
    ("conversation-messages-batch", "-"): Target(lambda w: {"conversation_id": w.conversation.pk}),
    ("conversation-message", "-"): Target(lambda w: {"conversation_id": w.conversation.pk, "message_id": w.message.pk}),
    ("run-detail", "-"): Target(_main_run),
    ("run-claim", "-"): Target(_main_run),
    ("run-claim", "group"): Target(lambda w: {"run_id": w.group_run.pk}),
    ("runs", "group"): Target(
        body=lambda w: {
            "user": "bob",
            "conversation_id": w.group_conversation.pk,
            "request_id": "req-new",
            "worker_id": "w2",
        }
    ),
    ("run-heartbeat", "-"): Target(_main_run),
    ("run-heartbeat", "sub"): Target(_sub_run),
    ("run-finish", "-"): Target(_main_run),
    ("run-finish", "sub"): Target(_sub_run),
    # The query names alice's chat item, so a scoped section would carry it if one were built.
    ("run-context", "-"): Target(_main_run, query=lambda w: {"query": MARKERS["chat"]}),
    ("run-context", "sub"): Target(_sub_run, query=lambda w: {"query": MARKERS["chat"]}),
    ("run-tool", "-"): Target(lambda w: {**_main_run(w), "tool": "remember_memory"}),
    ("run-tool", "sub"): Target(lambda w: {**_sub_run(w), "tool": "remember_memory"}),
    ("run-auto-memory-flags", "-"): Target(_main_run),
    ("chat-binding-detail", "-"): Target(lambda w: {"binding_id": w.binding.pk}),
    ("job-detail", "-"): Target(lambda w: {"job_id": w.job.pk}),
    ("job-detail", "svc"): Target(lambda w: {"job_id": w.svc_job.pk}),
    ("job-detail", "lsvc"): Target(lambda w: {"job_id": w.lsvc_job.pk}),
    # Chat keys (docs/API.md, "Chat reach"): alice's chat, a lane of it, a group bound to nobody.
    ("conversations", "chat"): Target(body=lambda w: {"user": "alice", "title": "new", "session_key": CHAT_KEY}),
    ("conversations", "other"): Target(body=lambda w: {"user": "bob", "title": "new", "session_key": CHAT_KEY}),
    ("conversations", "lane"): Target(body=lambda w: {"user": "bob", "title": "new", "session_key": LANE_KEY}),
    ("conversations", "unbound"): Target(body=lambda w: {"user": "bob", "title": "new", "session_key": GROUP_KEY}),
    ("conversations", "bad"): Target(body=lambda w: {"user": "bob", "title": "new", "session_key": "milky:private"}),
    ("conversation-detail", "session"): Target(
        lambda w: {"conversation_id": w.conversation.pk}, body=lambda w: {"session_key": GROUP_KEY}
    ),
    ("memory-items", "lane"): Target(
        body=lambda w: {"content": "Prefers aisle seats", "kind": "preference", "session_id": LANE_KEY}
    ),
    ("memory-search", "lane"): Target(body=lambda w: {"query": "seats", "session_id": LANE_KEY}),
    ("memory-search", "unbound"): Target(body=lambda w: {"query": "seats", "session_id": GROUP_KEY}),
    ("memory-consolidate", "lane"): Target(
        body=lambda w: {"session_id": LANE_KEY, "messages": [{"role": "user", "content": "I prefer aisle seats."}]}
    ),
    ("memory-dream", "lane"): Target(body=lambda w: {"session_id": LANE_KEY}),
    ("chat-bindings", "unbound"): Target(body=lambda w: {"chat_key": "milky:private:40004", "user": "bob"}),
    ("web:my_memory", "-"): Target(lambda w: {"memory_id": w.user_memory.pk}),
    ("web:my_memory_correct", "-"): Target(lambda w: {"memory_id": w.user_memory.pk}),
    ("web:my_memory_forget", "-"): Target(lambda w: {"memory_id": w.user_memory.pk}),
    ("web:project_memories", "-"): Target(_project),
    ("web:project_memory", "-"): Target(lambda w: {**_project(w), "memory_id": w.project_memory.pk}),
    ("web:project_memory_correct", "-"): Target(lambda w: {**_project(w), "memory_id": w.project_memory.pk}),
    ("web:project_memory_forget", "-"): Target(lambda w: {**_project(w), "memory_id": w.project_memory.pk}),
    ("web:conversation_detail", "-"): Target(lambda w: {"conversation_id": w.conversation.pk}),
    ("web:conversation_memory", "-"): Target(lambda w: {"conversation_id": w.conversation.pk}),
    ("web:run_detail", "-"): Target(_main_run),
    ("web:run_auto_memory_flags", "-"): Target(_main_run),
    ("schema", "-"): Target(query=lambda w: {"format": "json"}),
    ("admin:view_on_site", "-"): Target(
        lambda w: {"content_type_id": ContentType.objects.get_for_model(Project).pk, "object_id": w.project.pk}
    ),
    ("admin:app_list", "-"): Target(lambda w: {"app_label": "memory_app"}),
    ("admin/(?P<url>.*)", "-"): Target(url=lambda w: "/admin/nowhere/"),
    ("admin:auth_user_password_change", "-"): Target(lambda w: {"id": w.users["alice"].pk}),
    ("admin:memory_app_scopemigrationplan_apply", "-"): Target(lambda w: {"plan_id": w.plan.pk}),
    ("admin:memory_app_memorycandidate_review", "-"): Target(
        lambda w: {"object_id": quote(w.candidate.pk), "decision": "approve"}
    ),
}

# What each write sends: a valid request, so that a refusal is about who asks, not what.
BODIES: dict[tuple[str, str], dict | Callable[[World], dict]] = {
    **{
        (f"{ns}:mem0-add", "POST"): {"messages": "I like oolong tea", "user_id": "alice", "infer": False}
        for ns in MEM0_NAMESPACES
    },
    **{
        (f"{ns}:mem0-delete-all", "POST"): {"messages": "I like oolong tea", "user_id": "alice", "infer": False}
        for ns in MEM0_NAMESPACES
    },
    **{(f"{ns}:mem0-list", "POST"): {"filters": {"user_id": "alice"}} for ns in MEM0_NAMESPACES},
    **{(f"{ns}:mem0-list-v2", "POST"): {"user_id": "alice"} for ns in MEM0_NAMESPACES},
    **{
        (f"{ns}:mem0-search", "POST"): {"query": "plush desk", "filters": {"user_id": "alice"}}
        for ns in MEM0_NAMESPACES
    },
    **{
        (f"{ns}:{route}", "POST"): {"query": "plush desk", "user_id": "alice"}
        for ns in MEM0_NAMESPACES
        for route in ("mem0-search-v1", "mem0-search-v2")
    },
    **{(f"{ns}:mem0-memory", "PUT"): {"text": "I keep two plush toys on my desk"} for ns in MEM0_NAMESPACES},
    **{
        (f"{ns}:mem0-batch", "PUT"): lambda w: {"memories": [{"memory_id": w.user_memory.pk, "text": "Two plush toys"}]}
        for ns in MEM0_NAMESPACES
    },
    **{
        (f"{ns}:mem0-batch", "DELETE"): lambda w: {"memories": [{"memory_id": w.user_memory.pk}]}
        for ns in MEM0_NAMESPACES
    },
    ("profile", "PUT"): {"display_name": "Renamed"},
    ("project-list", "POST"): {"name": "Hermes"},
    ("project-detail", "PUT"): {"description": "Moon"},
    ("project-detail", "PATCH"): {"description": "Moon"},
    ("project-members", "POST"): {"username": "carol", "role": "member"},
    ("my-tokens", "POST"): {"name": "ci", "expires_in_days": 30},
    ("project-member-detail", "PUT"): {"role": "viewer"},
    ("project-member-detail", "PATCH"): {"role": "viewer"},
    ("my-memories", "POST"): {"kind": "fact", "content": "I drink tea"},
    ("my-memory-supersede", "POST"): {"content": "I drink coffee"},
    ("my-memory-detail", "PATCH"): {"paused": True, "expires_at": "2031-05-01T18:00:00Z"},
    ("project-memory-detail", "PATCH"): {"paused": True},
    ("memory-home-item", "PATCH"): {"paused": True},
    ("memory-item-detail", "PATCH"): {"paused": True},
    ("web:memory_home_item_change", "POST"): {"action": "pause"},
    ("project-memories", "POST"): {"kind": "decision", "content": "We ship on Fridays"},
    ("project-memory-supersede", "POST"): {"content": "We ship on Mondays"},
    ("my-settings", "PUT"): {"enable_memory": False},
    ("my-workspace-file", "PUT"): {"content": "- a new note\n"},
    ("conversations", "POST"): {"user": "alice", "title": "new"},
    ("conversation-detail", "PATCH"): {"title": "renamed"},
    ("conversation-messages", "POST"): {"role": "user", "content": "hello"},
    ("conversation-messages-batch", "POST"): {"messages": [{"role": "user", "content": "hello"}]},
    ("runs", "POST"): lambda w: {
        "user": "alice",
        "conversation_id": w.conversation.pk,
        "request_id": "req-new",
        "worker_id": "w2",
    },
    ("run-claim", "POST"): {"worker_id": "w1"},
    ("run-heartbeat", "POST"): {},
    ("run-finish", "POST"): {"status": "completed"},
    ("run-tool", "POST"): {"content": "Likes window seats"},
    ("auto-memory-settings", "PUT"): {"use": True},
    ("memory-switches", "PUT"): {"generate": True},
    ("run-auto-memory-flags", "POST"): {"use": True},
    ("memory-items", "POST"): {"content": "Prefers aisle seats", "kind": "preference", "session_id": CHAT_KEY},
    ("memory-search", "POST"): {"query": "seats", "session_id": CHAT_KEY},
    ("memory-dream", "POST"): {"session_id": CHAT_KEY},
    ("memory-consolidate", "POST"): {
        "session_id": CHAT_KEY,
        "messages": [{"role": "user", "content": "I prefer aisle seats."}],
    },
    ("chat-bindings", "POST"): {"chat_key": "milky:private:20002", "user": "bob"},
    ("web:chat_memories", "POST"): {"chat": CHAT_KEY, "display_name": "Travel chat"},
    ("password_reset", "POST"): {"email": "nobody@example.invalid"},
    ("web:projects", "POST"): {"name": "Hermes", "description": ""},
    ("memory-home-correct", "POST"): {"content": "Corrected in the memory home"},
    ("web:memory_home_item_correct", "POST"): {"kind": "fact", "content": "Corrected in the memory home"},
    ("my-import", "POST"): _export_file,
    ("web:memory_home_import", "POST"): lambda w: {
        "file": _Rereadable("export.json", json.dumps(_export_file(w)).encode())
    },
    ("web:profile", "POST"): {"display_name": "Renamed", "timezone": "UTC", "preferences": "{}"},
    ("web:workspace", "POST"): {"name": "MEMORY.md", "content": "- a new note\n"},
    ("web:set_language", "POST"): {"language": "zh-hans", "next": "/"},
    ("web:workspace_change_undo", "POST"): {"base_sha256": ""},
    ("web:tokens", "POST"): {"name": "ci", "expires_in_days": "30"},
    ("web:project_members", "POST"): {"username": "carol", "role": "member"},
    ("web:settings", "POST"): {"enable_memory": "on"},
    ("web:conversation_memory", "POST"): {"no_memory": "on"},
    ("web:auto_memory_settings", "POST"): {
        "use": "on",
        "min_idle_minutes": "30",
        "min_duration_seconds": "60",
        "min_length_chars": "200",
        "min_quota_remaining_pct": "10",
    },
    ("web:run_auto_memory_flags", "POST"): {"generate": "inherit", "use": "on"},
}


# The schema answers in OpenAPI's own formats and the docs page in HTML, errors included.
NOT_JSON = {"schema", "api-docs"}


def _request(kind: str, route: str, method: str, target: str, world: World) -> Request:
    where = TARGETS.get((route, target), Target())
    url = where.url(world) if where.url else reverse(route, kwargs=where.kwargs(world))
    body = where.body if where.body is not None else BODIES.get((route, method), {})
    body = body(world) if callable(body) else body
    return Request(kind, method, url, body, where.query(world), json_errors=route not in NOT_JSON)


# --- the world, once per module ----------------------------------------------------------------


@pytest.fixture(scope="module")
def world(django_db_setup, django_db_blocker, tmp_path_factory):
    # Built before any test's own workspace root exists: its notes file goes to a folder of its
    # own, so that a second build in one process (pytest-xdist may run the module in parts, and
    # SQLite hands out the rolled-back ids again) writes a change of its own.
    with django_db_blocker.unblock():
        outer = world_transaction()
        outer.__enter__()
        try:
            with override_settings(WORKSPACE_ROOT=tmp_path_factory.mktemp("matrix-world")):
                built = build_world()
        except BaseException:
            outer.__exit__(None, None, None)  # never leave the transaction open for later tests
            raise
    yield built
    with django_db_blocker.unblock():
        outer.__exit__(None, None, None)


@pytest.fixture(autouse=True)
def fresh_case_state(db, world):
    """alice's notes file in this test's workspace; no throttle counts from earlier tests."""
    write_notes_file(world)
    cache.clear()
    yield
    cache.clear()


def _failures(world: World, kind: str, table: dict, keys, personas) -> list[str]:
    lines = []
    for route, method, target in keys:
        request = _request(kind, route, method, target, world)
        for persona in personas:
            expect = table[route, method, target][persona]
            if expect.skipped:
                continue
            problem = run_case(world, persona, request, expect)
            if problem:
                lines.append(f"{method} {request.url} [{target}] as {problem}")
    return lines


def _fail(lines: list[str]) -> None:
    if lines:
        pytest.fail("Authorization matrix mismatches:\n  " + "\n  ".join(lines), pytrace=False)


# --- coverage: the tables and the URL configuration name the same routes ----------------------


def _covered() -> dict[str, set[str]]:
    covered: dict[str, set[str]] = {}
    for table in (API, WEB, ADMIN):
        for route, method, _target in table:
            covered.setdefault(route, set()).add(method)
    return covered


def test_every_route_has_an_authorization_case_and_every_case_a_route():
    covered = _covered()
    found = routes()
    missing, wrong_table = [], []
    for route in found:
        if route.admin_view:
            continue  # covered per ModelAdmin by test_model_admin_routes
        if route.kind == "admin":
            # Admin views take GET and treat other methods as a submission: one row will do.
            if not covered.get(route.key):
                missing.append(f"{route.key}  ({route.pattern} → {route.view})")
        else:
            for method in route.methods:
                if method not in covered.get(route.key, set()):
                    missing.append(f"{route.key} {method}  ({route.pattern} → {route.view})")
        tables = {"api": API, "web": WEB, "admin": ADMIN}
        for other, table in tables.items():
            if other != route.kind and any(key[0] == route.key for key in table):
                wrong_table.append(f"{route.key} is a {route.kind} route but has rows in the {other} table")
    keys = {route.key: route for route in found}
    stale = []
    for name, methods in covered.items():
        route = keys.get(name)
        if route is None:
            stale.append(f"{name}: no such route any more")
            continue
        allowed = ADMIN_METHODS if route.kind == "admin" else route.methods
        stale += [f"{name} {method}: the view does not answer {method}" for method in methods - set(allowed)]
    message = []
    if missing:
        message.append("Routes without an authorization case (add rows to the tables in this file):")
        message += [f"  {line}" for line in missing]
    if stale:
        message.append("Table rows for routes or methods that no longer exist:")
        message += [f"  {line}" for line in stale]
    message += wrong_table
    assert not message, "\n".join(message)


def test_every_target_and_body_names_a_table_row():
    rows = {(route, target) for table in (API, WEB, ADMIN) for route, _method, target in table}
    assert set(TARGETS) <= rows, sorted(set(TARGETS) - rows)
    writes = {(route, method) for table in (API, WEB, ADMIN) for route, method, _target in table}
    assert set(BODIES) <= writes, sorted(set(BODIES) - writes)


def test_every_registered_model_admin_has_its_standard_routes():
    by_admin: dict[str, set[str]] = {}
    for route in routes():
        if route.admin_view:
            by_admin.setdefault(route.model_admin.opts.label, set()).add(route.admin_view)
    registered = {model._meta.label for model in admin.site._registry}
    assert set(by_admin) == registered
    incomplete = {label: views for label, views in by_admin.items() if views != {*MODEL_ADMIN_VIEWS, "redirect"}}
    assert not incomplete, incomplete


# --- the matrix ---------------------------------------------------------------------------------


def _grouped(table) -> list[tuple[str, str]]:
    return sorted({(route, method) for route, method, _target in table})


@pytest.fixture
def schema_generated_once(monkeypatch):
    """The schema is built once for callers who are signed in and once for those who are not,
    and served again to the others: who may fetch it is decided before it is built (and what it
    lists depends only on being signed in), and building it takes the better part of a second."""
    build, built = SchemaGenerator.get_schema, {}

    def get_schema(self, request=None, public=False):
        key = (public, bool(request is not None and request.user.is_authenticated))
        if key not in built:
            built[key] = build(self, request=request, public=public)
        return built[key]

    monkeypatch.setattr(SchemaGenerator, "get_schema", get_schema)


@pytest.mark.parametrize(("route", "method"), _grouped(API))
def test_api_route(world, route, method, request):
    if route == "schema":
        request.getfixturevalue("schema_generated_once")
    keys = [key for key in API if key[:2] == (route, method)]
    _fail(_failures(world, "api", API, keys, API_PERSONAS))


@pytest.mark.parametrize(("route", "method"), _grouped(WEB))
def test_web_route(world, route, method):
    keys = [key for key in WEB if key[:2] == (route, method)]
    _fail(_failures(world, "web", WEB, keys, PERSONAS))


@pytest.mark.parametrize(("route", "method"), _grouped(ADMIN))
def test_admin_site_route(world, route, method):
    keys = [key for key in ADMIN if key[:2] == (route, method)]
    _fail(_failures(world, "admin", ADMIN, keys, ADMIN_PERSONAS))


# Every persona meets the admin's one gate (``AdminSite.admin_view``) on the site's own pages
# above; on each ModelAdmin's views the callers that can differ there are: no session, a user
# who is not staff, a service principal, staff without permissions and a superuser.
MODEL_ADMIN_PERSONAS = ("anon", "alice", "svc", "staff", "root")


def _model_admin_table(model_admin, world: World) -> list[tuple[Request, dict[str, Expect]]]:
    """The standard views of one ModelAdmin: who is not staff goes to the admin login; staff
    without permissions gets 403 on every view; a superuser reads what the ModelAdmin offers
    (its own ``has_add_permission``/``has_delete_permission``); positive writes are the admin
    tests' business."""
    model = model_admin.model
    obj = model._base_manager.order_by("pk").first()
    assert obj is not None, f"the world has no {model._meta.label} row; add one in build_world()"
    info = f"admin:{model._meta.app_label}_{model._meta.model_name}"
    root = _root_request(world)
    may = {"add": model_admin.has_add_permission(root), "delete": model_admin.has_delete_permission(root, obj)}
    gate = {"anon": Expect("admin-login"), "alice": Expect("admin-login"), "svc": Expect("admin-login")}
    cases = []
    for view in MODEL_ADMIN_VIEWS:
        url = reverse(f"{info}_{view}", args=[] if view in ("changelist", "add") else [obj.pk])
        for method in ("GET",) if view == "history" else ("GET", "POST"):
            root_expect = "-" if method == "POST" else "200" if may.get(view, True) else "403"
            cases.append((Request("admin", method, url), {**gate, "staff": Expect("403"), "root": Expect(root_expect)}))
    redirect = reverse(f"{info}_change", args=[obj.pk]).removesuffix("change/")
    cases.append((Request("admin", "GET", redirect), {**gate, "staff": Expect("302"), "root": Expect("302")}))
    return cases


def _root_request(world: World):
    request = RequestFactory().get("/admin/")
    request.user = world.users["root"]
    return request


@pytest.mark.parametrize("label", sorted(model._meta.label for model in admin.site._registry))
def test_model_admin_routes(world, label):
    model_admin = next(ma for model, ma in admin.site._registry.items() if model._meta.label == label)
    lines = []
    for request, row in _model_admin_table(model_admin, world):
        for persona in MODEL_ADMIN_PERSONAS:
            if row[persona].skipped:
                continue
            problem = run_case(world, persona, request, row[persona])
            if problem:
                lines.append(f"{request.method} {request.url} as {problem}")
    _fail(lines)
