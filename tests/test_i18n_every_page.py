"""Every web page in Simplified Chinese shows no English word of our own: no source string of the
zh-Hans catalog and no label or value of our choices (roles, states, kinds, outcomes...).

A user with data of every sort (memories of each tier, a project with an invitation, a bound chat
with items, a conversation with runs, a token, notes-file history, auto-memory log entries)
opens every page of the ``web`` namespace and the login page; as a superuser she opens the list,
change and add pages of every model of ours in the admin and the pages of our admin actions,
which also show no English name of our models and fields."""

import functools
import re
from datetime import timedelta
from html.parser import HTMLParser
from pathlib import Path

import pytest
from django.apps import apps
from django.conf import settings
from django.contrib import admin as admin_site
from django.contrib.admin.helpers import ACTION_CHECKBOX_NAME
from django.contrib.admin.utils import label_for_field, quote
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import models
from django.test import Client
from django.urls import get_resolver, reverse
from django.utils import timezone, translation

from identity_app import models as identity_models
from identity_app.models import Role
from identity_app.services import invitation_create, profile_update, token_issue
from memory_app.automemory import gates, words
from memory_app.automemory import models as automemory_models
from memory_app.automemory.models import AutoMemoryLogEntry, AutoMemoryOutcome
from memory_app.automemory.services import SETTINGS_FIELDS
from memory_app.memories import models as memories_models
from memory_app.memories import services as memory_services
from memory_app.notes import models as notes_models
from memory_app.notes.workspace import MAX_WORKSPACE_FILE_BYTES
from memory_app.ops import models as ops_models
from memory_app.ops.models import BackgroundJob, WorkerHeartbeat
from memory_app.reads import models as reads_models
from memory_app.runs import models as run_models
from memory_app.runs.models import RunKind, RunStatus
from memory_app.scoped import models as scoped_models
from memory_app.threads import models as thread_models
from tests.factories import (
    AgentRunFactory,
    ChatBindingFactory,
    ChatMemoryFactory,
    CompletedRunFactory,
    ConversationFactory,
    GlobalMemoryFactory,
    MembershipFactory,
    MemoryCandidateFactory,
    MessageFactory,
    ProjectFactory,
    ProjectMemoryFactory,
    ProjectSummaryFactory,
    UserMemoryFactory,
)

pytestmark = pytest.mark.django_db
PO = Path(settings.BASE_DIR) / "locale" / "zh_Hans" / "LC_MESSAGES" / "django.po"

# Views that answer only POST (a GET is 405): nothing to render.
POST_ONLY = {
    "set_language": "switches the language and redirects",
    "token_revoke": "revokes after the confirmation page (rendered through the tokens page's form)",
    "token_rotate": "rotates after the confirmation page",
    "invitation_accept": "a button on the invitations page",
    "invitation_decline": "a button on the invitations page",
    "project_invitation_cancel": "a button on the members page",
    "workspace_history_clear": "a button on the history page",
    "workspace_change_undo": "a button on the history page",
    "memory_home_forget_selected": "the bulk form posts here",
    "conversation_memory": "the conversation page's remember/forget switch posts here",
}
# Pages that are not HTML.
NOT_HTML = {"memory_home_export": "a JSON download whose keys are the export format"}
# Pages opened once per source.
PER_SOURCE = ("memory_home_items", "memory_home_reads")
# Words that stay as they are in every language, each with why.
ALLOWED = {
    "API": "the name of the interface, as in 'API token'",
    "MCP": "the protocol's name",
    "JSON": "a file format",
    "Markdown": "a file format",
    "MEMORY.md": "a file's name",
    "USER.md": "a file's name",
    "AGENTS.md": "a file's name",
    "UTC": "a time zone's name",
    "UTF-8": "a text encoding's name",
    "PostgreSQL": "a database's name",
    "LangGraph": "a library's name (the connect page's snippets)",
    "mem0": "a library's name",
    "Claude Desktop": "an assistant's name",
    "Cursor": "an editor's name",
    "VS Code": "an editor's name",
    "PUBLIC_BASE_URL": "a setting's name",
    "stdio": "an MCP transport's name",
    "SQLite": "a database's name",
    "FORGET": "the word to type to confirm forgetting everything, the same in every language",
    "Authorization: Token": "the HTTP header a program sends, shown as code",
    "password、secret、token、api_key、credential": "the key names the import refuses, as they are spelled",
}
# Choice values that are also code shown as code (ids, keys), never a sentence word.
SKIP_VALUES = {"api": "shown as API (allowed above)", "text": "a message type never shown on a page"}


class _Visible(HTMLParser):
    """The text a person sees: element text, titles, placeholders, labels (not scripts/styles).
    ``skip`` names more elements (by id or class) whose text is left out."""

    ATTRS = ("placeholder", "title", "aria-label", "alt", "data-label")
    VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}

    def __init__(self, skip=()):
        super().__init__()
        self.parts: list[str] = []
        self.skip = set(skip)
        self.hidden_tag: str | None = None
        self.depth = 0

    def handle_starttag(self, tag, attrs):
        if tag in self.VOID:
            if not self.hidden_tag:
                self._attributes(tag, dict(attrs))
            return
        if self.hidden_tag:
            self.depth += tag == self.hidden_tag
            return
        attrs = dict(attrs)
        names = {tag, "#" + (attrs.get("id") or "")} | {"." + c for c in (attrs.get("class") or "").split()}
        # <code> holds identifiers, keys and stored values as they are spelled (ids, file names,
        # a run's kind), the same in every language.
        if tag in ("script", "style", "template", "code") or names & self.skip:
            self.hidden_tag, self.depth = tag, 1
            return
        self._attributes(tag, attrs)

    def _attributes(self, tag, attrs):
        for name in self.ATTRS:
            if attrs.get(name):
                self.parts.append(attrs[name])
        if tag == "input" and attrs.get("type") in ("submit", "button") and attrs.get("value"):
            self.parts.append(attrs["value"])

    def handle_endtag(self, tag):
        if self.hidden_tag and tag == self.hidden_tag:
            self.depth -= 1
            if not self.depth:
                self.hidden_tag = None

    def handle_data(self, data):
        if not self.hidden_tag:
            self.parts.append(data)


def visible_text(html: str, skip=()) -> str:
    parser = _Visible(skip)
    parser.feed(html)
    return "\n".join(parser.parts)


def _pieces(msgid: str) -> set[str]:
    """The literal runs of words of a message, between placeholders, markup and punctuation."""
    phrases = set()
    for raw in re.split(r"%\(\w+\)[sd]|%[sd]|\{\{.*?\}\}|<[^>]*>|\{\w*\}|[\n…:·—(),.;!?\"“”]", msgid):
        piece = raw.strip(" '-/")
        if len(piece) > 3 and re.search(r"[A-Za-z]{2}", piece):
            phrases.add(piece)
    return phrases


def _template_phrases(folder: str) -> set[str]:
    """The messages the templates under ``folder`` translate."""
    phrases = set()
    for path in (Path(settings.BASE_DIR) / folder).rglob("*.html"):
        text = path.read_text("utf-8")
        messages = re.findall(r"\{% translate (?:\"([^\"]*)\"|'([^']*)')", text)
        phrases |= {double or single for double, single in messages}
        for body in re.findall(r"\{% blocktranslate[^%]*%\}(.*?)\{% (?:plural|endblocktranslate)", text, re.S):
            phrases.add(body)
    return set().union(*(_pieces(message) for message in phrases))


def _catalog_phrases() -> set[str]:
    """The catalog's English source strings that have a translation, cut into literal pieces."""
    po = PO.read_text("utf-8")
    phrases = set()
    pattern = r'\nmsgid ((?:".*"\n)+)(?:msgid_plural (?:".*"\n)+)?msgstr(?:\[0\])? ((?:".*"\n?)+)'
    for raw_id, raw_str in re.findall(pattern, po):
        msgid = "".join(re.findall(r'"(.*)"', raw_id)).encode().decode("unicode_escape").encode("latin-1").decode()
        msgstr = "".join(re.findall(r'"(.*)"', raw_str))
        if msgid and msgstr:
            phrases |= _pieces(msgid)
    return phrases


def _choice_words() -> set[str]:
    with translation.override("en"):
        return _choice_words_in_english()


def _choice_words_in_english() -> set[str]:
    words = set()
    modules = (
        identity_models,
        memories_models,
        notes_models,
        thread_models,
        run_models,
        automemory_models,
        scoped_models,
        reads_models,
        ops_models,
    )
    for module in modules:
        for value in vars(module).values():
            if isinstance(value, type) and issubclass(value, models.Choices) and value is not models.TextChoices:
                for choice, label in value.choices:
                    for word in (str(choice), str(label)):
                        if word.lower() in SKIP_VALUES or len(word) <= 3:
                            continue
                        words.add(word.replace("_", " "))
                        words.add(word)
    return words


def _english_left(text: str, phrases: set[str]) -> list[str]:
    for word in ALLOWED:
        text = text.replace(word, " ")
    folded = _fold(text)
    found = []
    for phrase in phrases:
        # The whole-word search only where the phrase occurs at all: a page against some thousand
        # phrases, each compiled anew past the regex cache, was most of the admin test's time.
        if _fold(phrase) in folded and _whole_phrase(phrase).search(text):
            found.append(phrase)
    return found


def _fold(text: str) -> str:
    """Case folded at least as far as ``re.IGNORECASE`` matches: it also takes the dotless ı and
    the dotted İ (folded to i and a combining dot) for i."""
    return text.casefold().replace("ı", "i").replace("\u0307", "")


@functools.cache
def _whole_phrase(phrase: str) -> re.Pattern:
    return re.compile(r"(?<![\w.-])" + re.escape(phrase) + r"(?![\w-])", re.IGNORECASE)


@pytest.fixture
def world(alice, bob, svc, admin):
    """Alice (staff too, for the admin pages) with something on every page."""
    alice.is_staff = alice.is_superuser = True
    alice.save()
    profile_update(user=alice, language="zh-hans")
    project = ProjectFactory(name="阿波罗")
    MembershipFactory(project=project, user=alice, role=Role.OWNER)
    MembershipFactory(project=project, user=bob, role=Role.MEMBER)
    invitation_create(actor=alice, project_id=project.pk, username="mallory_new")
    other = ProjectFactory(name="月球")
    MembershipFactory(project=other, user=bob, role=Role.OWNER)
    invitation_create(actor=bob, project_id=other.pk, username="alice")
    mine = UserMemoryFactory(owner=alice, content="我喜欢喝冰美式")
    UserMemoryFactory(owner=alice, content="我住在上海", status="superseded")
    project_memory = ProjectMemoryFactory(project=project, content="部署在周五")
    binding = ChatBindingFactory(user=alice, chat_key="milky:private:10001")
    chat_memory = ChatMemoryFactory(scope_id=binding.chat_key, content="群里说过茶")
    GlobalMemoryFactory(content="公共知识")
    candidate = MemoryCandidateFactory(memory=chat_memory)
    token_issue(user=alice)
    conversation = ConversationFactory(owner=alice, title="对话一", project=project)
    run = CompletedRunFactory(user=alice, conversation=conversation, project=project, prompt="帮我")
    child = AgentRunFactory(
        user=alice, conversation=conversation, kind=RunKind.SUBAGENT, parent_run=run, status=RunStatus.FAILED
    )
    MessageFactory(run=run, content="你好")
    for outcome in AutoMemoryOutcome:
        AutoMemoryLogEntry.objects.create(
            user=alice, run=run, run_ref=run.pk, project_id_ref=project.pk, outcome=outcome, content="一条"
        )
    # Every gate stopping a run, with the reason the gate gives, and the worker's other reasons.
    stops = [
        gates.no_memory_gate(conversation_no_memory=True),
        gates.idle_gate(idle_seconds=1, min_idle_minutes=5),
        gates.duration_gate(duration_seconds=1, min_duration_seconds=60),
        gates.length_gate(length_chars=1, min_length_chars=100),
        gates.external_context_gate(inter_run_messages=1, coordinator_subtasks=0),
        gates.quota_gate(quota_remaining_pct=1, min_quota_remaining_pct=50),
    ]
    assert {stop.gate for stop in stops} >= set(gates.GATE_ORDER)
    reasons = [*words.REASON_WORDS, "already expired (昨天)", "expires: 明天", "failed 3 times; given up"]
    reasons.append("failed (attempt 1 of 3); will retry")
    for stop in stops:
        AutoMemoryLogEntry.objects.create(
            user=alice, run=child, run_ref=child.pk, outcome="skipped", gate=stop.gate, reason=stop.reason
        )
    for reason in reasons:
        AutoMemoryLogEntry.objects.create(user=alice, run=run, run_ref=run.pk, outcome="skipped", reason=reason)
    # Forgetting a chat she can still undo (the page that offers it).
    undo = scoped_models.ChatForgetUndo.objects.create(
        user=alice, chat_key="milky:private:10009", expires_at=timezone.now() + timedelta(hours=1), item_count=2
    )
    # A paused memory with its change recorded (the mark and the provenance that says so).
    memory_services.memory_change(actor=alice, memory_id=mine.pk, paused=True, expires_at="2031-01-01T00:00:00Z")
    client = Client()
    client.force_login(alice)
    client.post(reverse("web:workspace"), {"name": "MEMORY.md", "content": "- 笔记\n"})
    client.post(reverse("web:workspace"), {"name": "MEMORY.md", "content": "- 笔记\n- 第二条\n"})
    return {
        "client": client,
        "memory_id": mine.pk,
        "project_id": project.pk,
        "project_memory": project_memory.pk,
        "run_id": run.pk,
        "child_id": child.pk,
        "conversation_id": conversation.pk,
        "chat_memory": chat_memory.pk,
        "chat_key": binding.chat_key,
        "candidate_id": candidate.pk,
        "undo_id": undo.pk,
    }


def _web_urls(world) -> list[str]:
    args_for = {
        "memory_id": world["memory_id"],
        "project_id": world["project_id"],
        "run_id": world["run_id"],
        "conversation_id": world["conversation_id"],
        "undo_id": world["undo_id"],
    }
    urls = []
    resolver = get_resolver()
    namespace = resolver.namespace_dict["web"][1]
    names = sorted({name for name in namespace.reverse_dict if isinstance(name, str)})
    for name in names:
        if name in POST_ONLY or name in NOT_HTML:
            continue
        params = namespace.reverse_dict.getlist(name)[0][0][0][1]
        kwargs = {param: args_for[param] for param in params}
        if name.startswith("project_memory"):
            kwargs["memory_id"] = world["project_memory"]
        url = reverse(f"web:{name}", kwargs=kwargs)
        if name in PER_SOURCE:
            sources = ["user", "notes", "auto", "shared", f"project:{world['project_id']}", f"chat:{world['chat_key']}"]
            urls += [f"{url}?source={source}" for source in sources]
        else:
            urls.append(url)
    urls += [reverse("web:run_detail", args=[world["child_id"]])]
    return urls


def test_every_page_in_chinese_shows_no_english_of_ours(world):
    client = world["client"]
    phrases = _catalog_phrases() | _choice_words()
    assert len(phrases) > 300
    urls = _web_urls(world)
    assert len(urls) > 25
    problems = {}
    for url in urls:
        response = client.get(url, follow=True)
        if response.status_code != 200:
            problems[url] = response.status_code
            continue
        found = _english_left(visible_text(response.content.decode()), phrases)
        if found:
            problems[url] = sorted(found)
    anonymous = Client(HTTP_ACCEPT_LANGUAGE="zh-Hans").get(reverse("login"))
    found = _english_left(visible_text(anonymous.content.decode()), phrases)
    if found:
        problems["login"] = sorted(found)
    assert not problems, "\n".join(f"{url}: {words}" for url, words in problems.items())


def test_the_check_sees_english(world):
    """The check is not blind: an English page of the same user fails it."""
    client = world["client"]
    profile_update(user=client.get(reverse("web:profile")).wsgi_request.user, language="en")
    html = client.get(reverse("web:conversations")).content.decode()
    assert _english_left(visible_text(html), _catalog_phrases() | _choice_words())


# --- the admin ---------------------------------------------------------------------------------

OUR_APPS = ("identity_app", "memory_app")
# Accounts of the world, shown as they are spelled wherever a row names its user.
USERNAMES = ("mallory_new", "mallory", "alice", "admin", "bob", "svc")
# Django's admin spells these images' text in English in its templates (not translatable).
DJANGO_ALT = re.compile(r'<img [^>]*alt="(?:Search|True|False|None)"[^>]*>')
# The admin's sections of other apps (Django's users and groups, django-axes): not ours.
OTHER_APPS = (".app-auth", ".app-axes")


def _our_admins() -> list:
    registry = admin_site.site._registry
    return sorted(
        ((model, model_admin) for model, model_admin in registry.items() if model._meta.app_label in OUR_APPS),
        key=lambda pair: pair[0]._meta.model_name,
    )


def _verbose_words() -> set[str]:
    """The English the admin shows of our own: the apps' and models' names, every field's
    label, and our model admins' columns, filters and actions."""
    with translation.override("en"):
        names = {str(apps.get_app_config(label).verbose_name) for label in OUR_APPS}
        for label in OUR_APPS:
            for model in apps.get_app_config(label).get_models():
                names |= {str(model._meta.verbose_name), str(model._meta.verbose_name_plural)}
                names |= {str(f.verbose_name) for f in model._meta.get_fields() if hasattr(f, "verbose_name")}
        for model, model_admin in _our_admins():
            names |= {str(label_for_field(column, model, model_admin)) for column in model_admin.list_display}
            names |= {str(description) for _func, _name, description in model_admin._get_base_actions()}
            for entry in model_admin.list_filter:
                if isinstance(entry, type) and issubclass(entry, admin_site.SimpleListFilter):
                    names.add(str(entry.title))
                    names |= {str(label) for _value, label in entry.lookups(entry, None, model_admin)}
        names.discard("ID")
    return set().union(*(_pieces(name) for name in names))


@pytest.fixture
def admin_world(world):
    """The world, with a row of every model our admin shows."""
    alice = world["client"].get(reverse("web:profile")).wsgi_request.user
    run = run_models.AgentRun.objects.get(pk=world["run_id"])
    message = thread_models.Message.objects.filter(run=run).first()
    thread_models.ToolCall.objects.create(message=message, conversation=run.conversation, name="搜索", status="ok")
    notes_models.UserSettings.objects.get_or_create(user=alice)
    automemory_models.AutoMemorySettings.objects.get_or_create(user=alice)
    automemory_models.AutoMemoryClaim.objects.create(run=run, token="t1", expires_at=timezone.now())
    project = identity_models.Project.objects.get(pk=world["project_id"])
    ProjectSummaryFactory(project=project, title="总结", content="进展", created_by=alice)
    BackgroundJob.objects.create(kind="dream", user=alice)
    WorkerHeartbeat.objects.create(worker_id="w1", started_at=timezone.now(), beat_at=timezone.now())
    plan = scoped_models.ScopeMigrationPlan.objects.create(name="计划", created_by=alice)
    for decision in scoped_models.MigrationDecision:
        scoped_models.ScopeMigrationEntry.objects.create(
            plan=plan,
            item_id=f"mem_{decision}",
            kind="fact",
            content_preview="旧的",
            decision=decision,
            fingerprint="f",
        )
    return {**world, "plan_id": plan.pk}


def _admin_urls(world) -> list[str]:
    urls = [reverse("admin:index"), *(reverse("admin:app_list", args=[label]) for label in OUR_APPS)]
    for model, _model_admin in _our_admins():
        info = f"admin:{model._meta.app_label}_{model._meta.model_name}"
        first = model._default_manager.order_by("pk").first()
        assert first is not None, model
        urls += [reverse(f"{info}_changelist"), reverse(f"{info}_change", args=[quote(first.pk)])]
    plans = "admin:memory_app_scopemigrationplan"
    # What approving or rejecting a candidate will do, said before it is done.
    reviews = [
        reverse("admin:memory_app_memorycandidate_review", args=[quote(world["candidate_id"]), decision])
        for decision in ("approve", "reject")
    ]
    return [*urls, *reviews, reverse(f"{plans}_import"), reverse(f"{plans}_apply", args=[world["plan_id"]])]


def _admin_problems(client, phrases):
    problems = {}

    def check(url, response):
        if response.status_code != 200:
            problems[url] = response.status_code
            return
        text = visible_text(DJANGO_ALT.sub(" ", response.content.decode()), skip=OTHER_APPS)
        for name in USERNAMES:
            text = re.sub(rf"\b{name}\b", " ", text)
        found = _english_left(text, phrases)
        if found:
            problems[url] = sorted(found)

    return problems, check


def test_admin_pages_in_chinese_show_no_english_of_ours(admin_world):
    """Every list and change page of our models, the add pages the admin offers, and the pages of
    our actions, as a superuser whose language is Chinese: no English of our catalog, of our
    choices, or of our models' and fields' names."""
    client = admin_world["client"]
    phrases = _catalog_phrases() | _choice_words() | _verbose_words()
    assert len(_verbose_words()) > 150
    problems, check = _admin_problems(client, phrases)
    urls = _admin_urls(admin_world)
    for url in urls:
        check(url, client.get(url))
    for model, _model_admin in _our_admins():
        url = reverse(f"admin:{model._meta.app_label}_{model._meta.model_name}_add")
        response = client.get(url)
        if response.status_code != 403:
            check(url, response)
    # The confirmation pages of the memory actions (superuser: may review).
    changelist = reverse("admin:memory_app_memory_changelist")
    for action in ("supersede_memories", "forget_memories"):
        response = client.post(changelist, {"action": action, ACTION_CHECKBOX_NAME: [admin_world["memory_id"]]})
        check(f"{changelist} {action}", response)
    # A dry run's report.
    apply = reverse("admin:memory_app_scopemigrationplan_apply", args=[admin_world["plan_id"]])
    check(f"{apply} dry run", client.post(apply, {"dry_run": "on", "apply_all_safe": "on", "confirm": "on"}))
    assert not problems, "\n".join(f"{url}: {words}" for url, words in problems.items())


def test_the_admin_check_sees_english(admin_world):
    """The admin check is not blind: the same pages in English fail it."""
    client = admin_world["client"]
    profile_update(user=client.get(reverse("web:profile")).wsgi_request.user, language="en")
    phrases = _verbose_words()
    problems, check = _admin_problems(client, phrases)
    for url in (reverse("admin:memory_app_memory_changelist"), reverse("admin:identity_app_apitoken_changelist")):
        check(url, client.get(url))
    assert len(problems) == 2, problems


BAD_IMPORTS = [
    b"\xff\xfe not utf-8",
    b"{not json",
    b'{"a": 1, "a": 2}',
    b'{"format": "other"}',
    b'{"format": "memory-service-export", "version": 9}',
    b'{"format": "memory-service-export", "version": 2, "memories": {"user": {}}}',
    b'{"format": "memory-service-export", "version": 2, "memories": {"user": [1]}}',
    b'{"format": "memory-service-export", "version": 2, "memories": {"user": [{"kind": "fact", "content": "x", "zz": 1}]}}',
    b'{"format": "memory-service-export", "version": 2, "memories": {"user": [{"kind": "nope", "content": "x"}]}}',
    b'{"format": "memory-service-export", "version": 2, "memories": {"user": [{"kind": "fact", "content": " "}]}}',
    b'{"format": "memory-service-export", "version": 2, "memories": {"user": [{"kind": "fact", "content": "x", '
    b'"status": "odd"}]}}',
    b'{"format": "memory-service-export", "version": 2, "memories": {"user": [{"kind": "fact", "content": "x", '
    b'"expires_at": "2030-01-01T00:00:00"}]}}',
    b'{"format": "memory-service-export", "version": 2, "memories": {"user": [{"kind": "fact", "content": "x", '
    b'"expires_at": "soon"}]}}',
    b'{"format": "memory-service-export", "version": 2, "memories": {"user": []}, "settings": {"zz": 1}}',
    b'{"format": "memory-service-export", "version": 2, "memories": {"user": []}, "settings": {"enable_memory": 1}}',
    b'{"format": "memory-service-export", "version": 2, "memories": {"user": []}, "settings": []}',
    b'{"format": "memory-service-export", "version": 2, "memories": {"user": []}, "notes_files": {"X.md": "a"}}',
    # Errors found by the rules of the pages the sections come from (nested in the file).
    *(
        b'{"format": "memory-service-export", "version": 2, "memories": {"user": []}, ' + section + b"}"
        for section in (
            b'"notes_files": {"MEMORY.md": 5}',
            b'"notes_files": {"MEMORY.md": "' + b"x" * (MAX_WORKSPACE_FILE_BYTES + 1) + b'"}',
            b'"settings": {"auto_memory": {"zz": 1}}',
            b'"settings": {"auto_memory": {"generate": 1}}',
            b'"settings": {"auto_memory": {"extract_model": 5}}',
            b'"settings": {"auto_memory": {"min_idle_minutes": -1}}',
            b'"user": {"timezone": "Mars/Base"}',
            b'"user": {"language": "fr"}',
            b'"user": {"preferences": []}',
            b'"user": {"preferences": {"password": "x"}}',
            b'"user": {"display_name": "' + b"x" * 151 + b'"}',
        )
    ),
    b'{"format": "memory-service-export", "version": 2, "memories": {"user": [{"kind": "fact", "content": "a\\u0000"}]}}',
    b'{"format": "memory-service-export", "version": 2, "memories": {"user": [{"kind": "fact", "content": "x", '
    b'"metadata": {"k": "' + b"x" * 70000 + b'"}}]}}',
]
# Where in the file the problem is (``memories.user[0]``, ``settings.enable_memory``), and a key or
# value quoted from it, are named as the file spells them.
KEY_PATH = re.compile(
    r"\b(?:memories|settings|notes_files|user|format|expires_at|content|kind|metadata|preferences|"
    + "|".join(SETTINGS_FIELDS)
    + r")(?:\.\w+|\[\d+\])*|'[^']*'"
)


def test_import_errors_on_the_web_page_are_in_chinese(world):
    """Each way an import file can be refused is told in Chinese on the web import page (the API
    says the same in English)."""
    client = world["client"]
    phrases = _catalog_phrases() | _choice_words()
    problems = {}
    for raw in BAD_IMPORTS:
        upload = SimpleUploadedFile("export.json", raw, content_type="application/json")
        response = client.post(reverse("web:memory_home_import"), {"file": upload})
        assert response.status_code == 400, raw
        errors = re.findall(r'<ul class="errorlist[^"]*"[^>]*>(.*?)</ul>', response.content.decode(), re.S)
        assert errors, raw
        text = KEY_PATH.sub(" ", visible_text(" ".join(errors)))
        # "kind must be one of …" lists the values as the file spells them.
        kinds = "|".join(memories_models.Kind.values)
        text = re.sub(rf"\b(?:{kinds})\b", " ", text)
        found = _english_left(text, phrases)
        if not re.search(r"[\u4e00-\u9fff]", text):
            found.append("(no Chinese)")
        if found:
            problems[raw[:160]] = (text, found)
    assert not problems, "\n".join(f"{raw!r}: {text} {found}" for raw, (text, found) in problems.items())
