"""The pages speak plain words in each language: whole sentences (no Chinese stitched from English
parts: no space between Chinese words, no Latin full stop), a run's figures and the auto-memory
log's comparisons in words with the raw figures behind a toggle, the readable export in the page's
language (and "agent tasks", not "runs"), roles as labels, and the admin's codes in words."""

import re

import pytest
from django.contrib.admin.utils import quote
from django.test import Client
from django.urls import reverse
from django.utils import translation

from config.sentences import join_sentences
from identity_app.models import Role
from identity_app.services import profile_update
from memory_app.automemory.models import AutoMemoryLogEntry
from memory_app.home.provenance import provenance_for
from memory_app.memories import services as memory_services
from memory_app.ops.models import BackgroundJob
from memory_app.runs.models import AgentRun
from memory_app.runs.words import duration_words
from tests.factories import (
    ChatBindingFactory,
    CompletedRunFactory,
    MembershipFactory,
    MemoryCandidateFactory,
    ProjectFactory,
    UserMemoryFactory,
)

pytestmark = pytest.mark.django_db

CJK = r"[\u3000-\u303f\u4e00-\u9fff\uff00-\uffef]"


def signed_in(user, language="en") -> Client:
    profile_update(user=user, language=language)
    client = Client()
    client.force_login(user)
    return client


def test_sentences_are_joined_as_each_language_writes_them():
    with translation.override("en"):
        assert join_sentences("One.", "", "Two.") == "One. Two."
    with translation.override("zh-hans"):
        assert join_sentences("一。", " ", "二。") == "一。二。"


def test_chinese_provenance_is_whole_sentences_with_no_stitching(alice, svc):
    ChatBindingFactory(user=alice, chat_key="milky:private:10001", display_name="旅行")
    memory = memory_services.memory_create(
        actor=alice, tier="user", kind="fact", content="喜欢绿茶", source_thread_id="thr_gone"
    )
    memory_services.memory_change(actor=alice, memory_id=memory.pk, paused=True, expires_at="2031-01-01T00:00:00Z")
    newer = memory_services.memory_supersede(actor=alice, memory_id=memory.pk, content="喜欢乌龙茶")
    with translation.override("zh-hans"):
        sentences = [p.sentence for p in provenance_for(user=alice, memories=[memory, newer]).values()]
    for sentence in sentences:
        assert re.search(CJK, sentence), sentence
        assert not re.search(rf"{CJK} {CJK}", sentence), sentence  # no space between Chinese words
        assert not re.search(r"\.(?:\s|$)", sentence), sentence  # no Latin full stop
        assert "。 " not in sentence
    assert "你通过 API 保存了它。" in sentences[0]


def test_durations_read_as_words():
    with translation.override("en"):
        words = [duration_words(s) for s in (0, 59, 95, 3600 + 120, 2 * 86400 + 3600, None, -1, True)]
    assert words == [
        "0 s",
        "59 s",
        "1 min 35 s",
        "1 h 2 min",
        "2 d 1 h",
        "—",
        "—",
        "—",
    ]


def test_a_run_page_says_its_figures_in_words_and_keeps_the_rest_behind_the_toggle(alice):
    run = CompletedRunFactory(user=alice)
    AgentRun.objects.filter(pk=run.pk).update(usage={"duration_s": 95, "quota_remaining_pct": 40, "tokens_in": 1200})
    page = signed_in(alice).get(reverse("web:run_detail", args=[run.pk])).content.decode()
    visible, details = page.split('id="run-internals"', 1)
    assert "Took" in visible and "1 min 35 s" in visible and "Quota left when it finished" in visible
    assert "40%" in visible
    assert "duration_s" not in page and "{&#x27;" not in page and "{'" not in page
    assert "tokens_in" in details and "tokens_in" not in visible
    zh = signed_in(alice, "zh-hans").get(reverse("web:run_detail", args=[run.pk])).content.decode()
    assert "用时" in zh and "1 分 35 秒" in zh


def test_the_auto_memory_log_says_what_a_gate_compared(alice):
    run = CompletedRunFactory(user=alice)
    AutoMemoryLogEntry.objects.create(
        user=alice,
        run=run,
        run_ref=run.pk,
        outcome="skipped",
        gate="idle",
        reason="run finished too recently",
        details={"idle_seconds": 30, "min_idle_seconds": 600, "worker": "w-7"},
    )
    AutoMemoryLogEntry.objects.create(
        user=alice,
        run=run,
        run_ref=run.pk,
        outcome="skipped",
        gate="no_memory",
        reason="the conversation is in “don't remember this chat” mode",
        details={"conversation_no_memory": True},
    )
    page = signed_in(alice).get(reverse("web:auto_memory_log")).content.decode()
    assert "It had finished 30 s before; the setting asks for 10 min 0 s." in page
    assert "The conversation was in “don&#x27;t remember this chat” mode." in page
    assert "conversation_no_memory=True" not in page and "idle_seconds" not in page
    toggle = page.split("<details", 1)[1]
    assert "worker" in toggle and "w-7" in toggle
    zh = signed_in(alice, "zh-hans").get(reverse("web:auto_memory_log")).content.decode()
    assert "它在 30 秒前结束；设置要求 10 分 0 秒。" in zh


def test_the_readable_export_speaks_the_pages_language_and_says_agent_tasks(alice):
    UserMemoryFactory(owner=alice, kind="preference", content="Tea, not coffee")
    english = signed_in(alice).get(reverse("web:memory_home_export"), {"as": "markdown"}).content.decode()
    assert "## About me" in english and "**Preference**" in english
    assert "Use my memories in new agent tasks" in english
    assert not re.search(r"\bruns?\b", english)
    chinese = signed_in(alice, "zh-hans").get(reverse("web:memory_home_export"), {"as": "markdown"}).content.decode()
    assert "## 关于我" in chinese and "在新的智能体任务中使用我的记忆" in chinese and "Use my memories" not in chinese
    api_markdown = Client()
    api_markdown.force_login(alice)
    assert "## About me" in api_markdown.get("/api/users/me/export/markdown").content.decode()  # the API: English


def test_roles_show_as_labels(alice, bob):
    project = ProjectFactory(name="Apollo")
    MembershipFactory(project=project, user=alice, role=Role.OWNER)
    MembershipFactory(project=project, user=bob, role=Role.VIEWER)
    page = signed_in(alice).get(reverse("web:project_members", args=[project.pk])).content.decode()
    cells = re.findall(r'data-label="Role">([^<]+)<', page)
    assert sorted(cells) == ["Owner", "Viewer"]
    zh = signed_in(alice, "zh-hans").get(reverse("web:project_members", args=[project.pk])).content.decode()
    assert "所有者" in zh and "查看者" in zh


def test_the_admin_shows_codes_in_words(admin):
    candidate = MemoryCandidateFactory(source="dream", extractor="deterministic")
    BackgroundJob.objects.create(kind="dream", user=admin)
    client = signed_in(admin)
    page = client.get(reverse("admin:memory_app_memorycandidate_change", args=[quote(candidate.pk)])).content.decode()
    assert "looking back over the chat" in page and "built-in rules" in page
    jobs = client.get(reverse("admin:memory_app_backgroundjob_changelist")).content.decode()
    assert "looking back over a chat (dreaming)" in jobs
