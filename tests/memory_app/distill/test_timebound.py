"""Time-bounded statements (docs/auto-memory.md, "Expiry"): the expiry the extraction sets on
the bilingual set of bench/data/timebound.json (a floor on precision and recall; the bench
prints the figures), relative to when the statement was said and in the speaker's zone; the
auto-memory worker and chat consolidation write it and say which words set it."""

import json
import zoneinfo
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import time_machine

from identity_app.services import profile_update
from memory_app.automemory.models import AutoMemoryLogEntry
from memory_app.automemory.worker import round_run
from memory_app.distill.timebound import expiry_for
from memory_app.scoped.consolidation import consolidate_turn
from memory_app.scoped.models import MemoryCandidate
from tests.factories import ChatBindingFactory
from tests.memory_app.automemory.helpers import auto_memories, enable, finished_run

DATA = Path(__file__).resolve().parents[3] / "bench" / "data" / "timebound.json"
LISBON = zoneinfo.ZoneInfo("Europe/Lisbon")
SHANGHAI = zoneinfo.ZoneInfo("Asia/Shanghai")
TUESDAY = datetime(2026, 12, 8, 10, 0, tzinfo=UTC)
FILLER = " The rest of this conversation is small talk about the weather and lunch plans for the team today."


def last_day(expires_at: datetime, zone) -> str:
    local = expires_at.astimezone(zone)
    if (local.hour, local.minute) == (0, 0):  # "before X": X's start, the statement's last day is the one before
        local -= timedelta(minutes=1)
    return local.date().isoformat()


def test_the_bilingual_set_gets_the_right_expiry():
    data = json.loads(DATA.read_text(encoding="utf-8"))
    assert len(data["bounded"]) >= 40 and len(data["timeless"]) >= 40
    said_at, zone = datetime.fromisoformat(data["said_at"]), zoneinfo.ZoneInfo(data["zone"])
    set_ = right = 0
    for text, want in data["bounded"] + data["timeless"]:
        found = expiry_for(text, now=said_at, zone=zone)
        got = last_day(found.expires_at, zone) if found else None
        set_ += got is not None
        right += got is not None and got == want
    precision, recall = right / set_, right / len(data["bounded"])
    assert precision >= 0.9 and recall >= 0.85, (precision, recall)


@pytest.mark.parametrize(
    ("text", "phrase", "local_end"),
    [
        ("I'm in Lisbon this week", "this week", "2026-12-13 23:59"),
        ("the staging freeze lasts until Friday", "until Friday", "2026-12-11 23:59"),
        ("这个月我在上海出差", "这个月", "2026-12-31 23:59"),
        ("我们到周五为止使用旧接口", "到周五为止", "2026-12-11 23:59"),
        ("下个月之前都用英文", "下个月之前", "2027-01-01 00:00"),
        ("We use the old endpoint for the next two months", "for the next two months", "2027-02-08 23:59"),
    ],
)
def test_the_phrase_and_its_end_in_the_speakers_zone(text, phrase, local_end):
    found = expiry_for(text, now=TUESDAY, zone=SHANGHAI)
    assert found is not None and found.phrase == phrase
    assert found.expires_at.astimezone(SHANGHAI).strftime("%Y-%m-%d %H:%M") == local_end


def test_the_zone_decides_the_day():
    # 23:30 on Sunday in Lisbon is already Monday in Shanghai: "today" ends on different days.
    late_sunday = datetime(2026, 12, 13, 23, 30, tzinfo=UTC)
    assert last_day(expiry_for("I'm home today", now=late_sunday, zone=LISBON).expires_at, LISBON) == "2026-12-13"
    assert last_day(expiry_for("I'm home today", now=late_sunday, zone=SHANGHAI).expires_at, SHANGHAI) == "2026-12-14"


@pytest.mark.parametrize(
    "text",
    [
        "Never deploy until the tests pass.",
        "I have worked here for five years.",
        "We use PostgreSQL for billing.",
        "我们用了三年的 MySQL。",
        "until " + "x" * 5000,
        "",
    ],
)
def test_timeless_or_unreadable_statements_set_nothing(text):
    assert expiry_for(text, now=TUESDAY, zone=LISBON) is None


def test_a_bound_already_past_when_said_sets_nothing():
    assert expiry_for("I was in Lisbon until Friday", now=TUESDAY, zone=LISBON) is not None  # the coming Friday
    assert expiry_for("We froze deploys before today", now=TUESDAY, zone=LISBON) is None


@pytest.mark.django_db
def test_the_worker_sets_the_expiry_relative_to_the_run_and_logs_the_phrase(alice, project):
    profile_update(user=alice, timezone="Asia/Shanghai")
    enable(alice, min_length_chars=10)
    with time_machine.travel(TUESDAY, tick=False):
        finished_run(
            user=alice,
            project=project,
            text="We use the staging cluster until Friday. We always run the linter." + FILLER,
        )
        round_run(worker_id="test")
    bounded = auto_memories().get(content="We use the staging cluster until Friday.")
    assert bounded.expires_at.astimezone(SHANGHAI).strftime("%Y-%m-%d %H:%M") == "2026-12-11 23:59"
    assert auto_memories().get(content="We always run the linter.").expires_at is None
    entry = AutoMemoryLogEntry.objects.get(memory_id=bounded.pk)
    assert entry.details["expiry"]["phrase"] == "until Friday" and "until Friday" in entry.reason


@pytest.mark.django_db
def test_a_statement_no_longer_true_when_the_worker_reads_it_is_skipped_and_logged(alice, project):
    enable(alice, min_length_chars=10)
    with time_machine.travel(TUESDAY, tick=False):
        run = finished_run(user=alice, project=project, text="We use the backup database today." + FILLER)
    with time_machine.travel(TUESDAY + timedelta(days=2), tick=False):
        run.finished_at = TUESDAY
        run.save(update_fields=["finished_at"])
        round_run(worker_id="test")
    assert not auto_memories().exists()
    entry = AutoMemoryLogEntry.objects.get(run_ref=run.pk, outcome="skipped")
    assert entry.reason == "already expired (today)"


@pytest.mark.django_db
def test_consolidation_sets_the_expiry_in_the_bound_users_zone(svc, alice):
    profile_update(user=alice, timezone="Asia/Shanghai")
    ChatBindingFactory(chat_key="milky:private:10001", user=alice)
    with time_machine.travel(datetime(2026, 12, 31, 17, 0, tzinfo=UTC), tick=False):  # 1 Jan 01:00 in Shanghai
        report = consolidate_turn(
            actor=svc,
            session_id="milky:private:10001",
            messages=[{"role": "user", "content": "这个月我们使用上海的服务器。"}],
        )
    [record] = report.candidates
    assert record.decision == "created"
    assert record.memory.expires_at.astimezone(SHANGHAI).strftime("%Y-%m-%d %H:%M") == "2027-01-31 23:59"
    assert MemoryCandidate.objects.get(pk=record.pk).evidence["expiry"]["phrase"] == "这个月"
