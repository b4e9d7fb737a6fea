"""Date-times from outside are taken as the instant they name, in UTC (config/instants.py).

Python reads offsets up to ±23:59 and PostgreSQL refuses any over ±15:59, and near the ends of
the calendar the same instant in UTC is outside the years Python holds. Before, a list filtered
with ``created_before=0685-02-24T20:10:14.546-20:49`` was a 500 on PostgreSQL, and an
``expires_at`` of 9999-12-31T23:00:00-05:00 a 500 everywhere. Now every date-time a request
brings is either an ordinary instant, whatever offset it is written with, or a 400, and a refused
one changes nothing."""

import importlib
import zoneinfo
from datetime import UTC, datetime, timedelta, timezone
from urllib.parse import urlencode

import pytest
from django.apps import apps as django_apps
from django.utils.timezone import override as timezone_override
from hypothesis import example, given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st

from config.instants import SHOWN_FIRST, SHOWN_LAST, OutOfRange, in_utc, in_zone, shown_everywhere
from identity_app.models import ChatBinding, Project, Role
from identity_app.services import profile_update
from identity_app.templatetags import ui
from memory_app.memories import timing
from memory_app.memories.models import Memory, MemoryChange, Origin, Tier
from memory_app.memories.services import memory_create
from memory_app.runs.models import AgentRun
from memory_app.threads.models import Conversation, Message
from tests.factories import AgentRunFactory, ChatBindingFactory, ConversationFactory, MembershipFactory

LISTS = {
    "/api/users/me/memories/": ("created_after", "created_before"),
    "/api/projects/{project}/identity-memories/": ("created_after", "created_before"),
    "/api/conversations/": ("created_after", "created_before", "updated_after", "updated_before"),
    "/api/runs/": ("created_after", "created_before"),
    "/api/projects/": ("created_after", "created_before"),
    "/api/chat-bindings/": ("created_after", "created_before"),
}

offsets = st.integers(min_value=-(24 * 60 - 1), max_value=24 * 60 - 1).map(
    lambda minutes: timezone(timedelta(minutes=minutes))
)
moments = st.builds(
    lambda naive, zone: naive.replace(tzinfo=zone),
    st.datetimes(min_value=datetime(1, 1, 1), max_value=datetime(9999, 12, 31, 23, 59, 59)),
    offsets,
)


def written(moment: datetime) -> str:
    """As a client writes it: ``isoformat`` (offsets of minutes, e.g. -20:49)."""
    return moment.isoformat()


@given(moment=moments)
def test_an_instant_in_utc_is_the_same_instant_or_out_of_range(moment):
    try:
        utc = in_utc(moment)
    except OutOfRange:
        naive = moment.replace(tzinfo=None)
        # only at the ends of the calendar
        assert naive - datetime(1, 1, 1) < timedelta(days=1) or datetime(9999, 12, 31) - naive < timedelta(days=1)
        return
    assert utc == moment and utc.utcoffset() == timedelta(0)


@pytest.fixture
def rows(alice, project, api):
    """Alice's rows of every list, two days apart (created 2026-01-01 and 2026-01-03, UTC)."""
    early, late = datetime(2026, 1, 1, tzinfo=UTC), datetime(2026, 1, 3, tzinfo=UTC)
    memories = [
        memory_create(actor=alice, tier=Tier.USER, kind="fact", content=f"{n} fact", origin=Origin.API)
        for n in ("first", "second")
    ]
    shared = [
        memory_create(
            actor=alice, tier=Tier.PROJECT, project_id=project.pk, kind="fact", content=f"{n} shared", origin=Origin.API
        )
        for n in ("first", "second")
    ]
    for one, two in (memories, shared):
        Memory.objects.filter(pk=one.pk).update(created_at=early)
        Memory.objects.filter(pk=two.pk).update(created_at=late)
    first, second = (ConversationFactory(owner=alice, title=title) for title in ("first", "second"))
    Conversation.objects.filter(pk=first.pk).update(created_at=early, updated_at=early)
    Conversation.objects.filter(pk=second.pk).update(created_at=late, updated_at=late)
    for model, one, two in (
        (AgentRun, AgentRunFactory(user=alice, conversation=first), AgentRunFactory(user=alice, conversation=second)),
        (ChatBinding, ChatBindingFactory(user=alice), ChatBindingFactory(user=alice)),
        (Project, MembershipFactory(user=alice, role=Role.OWNER).project, project),
    ):
        model.objects.filter(pk=one.pk).update(created_at=early)
        model.objects.filter(pk=two.pk).update(created_at=late)
    client = api(alice)
    return client


def listed(client, path, **query):
    response = client.get(path + "?" + urlencode(query))
    return response.status_code, sorted(map(str, (row.get("id") for row in response.json().get("results", []))))


def test_a_filter_written_with_an_offset_postgresql_refuses_filters_by_its_instant(rows, project):
    # 2026-01-02T12:00 UTC, written at -20:49 (PostgreSQL takes offsets up to ±15:59)
    far = "2026-01-01T15:11:00-20:49"
    assert datetime.fromisoformat(far) == datetime(2026, 1, 2, 12, 0, tzinfo=UTC)
    for route, names in LISTS.items():
        path = route.format(project=project.pk)
        for name in names:
            status, found = listed(rows, path, **{name: far})
            assert status == 200, (path, name)
            assert (status, found) == listed(rows, path, **{name: "2026-01-02T12:00:00Z"}), (path, name)
        # one row on each side of the instant
        assert len(listed(rows, path, created_after=far)[1]) == 1, path
        assert len(listed(rows, path, created_before=far)[1]) == 1, path


@pytest.mark.parametrize("edge", ["9999-12-31T23:00:00-05:00", "0001-01-01T00:30:00+05:00"])
def test_a_filter_utc_cannot_hold_is_a_400_that_says_so(rows, project, edge):
    for path, names in LISTS.items():
        for name in names:
            response = rows.get(path.format(project=project.pk) + "?" + urlencode({name: edge}))
            assert response.status_code == 400, (path, name)
            assert "between the years 1 and 9999 in UTC" in response.content.decode()


def test_any_date_time_filters_every_list_or_is_refused(rows, project):
    """Any date-time of the years Python reads, at any offset it reads, in any list's filter."""

    @hypothesis_settings(max_examples=80, deadline=None)
    @given(moment=moments, where=st.sampled_from([(p, n) for p, names in LISTS.items() for n in names]))
    def filters(moment, where):
        route, name = where
        path = route.format(project=project.pk)
        status, found = listed(rows, path, **{name: written(moment)})
        try:
            utc = in_utc(moment)
        except OutOfRange:
            assert status == 400
            return
        assert status == 200
        assert found == listed(rows, path, **{name: utc.isoformat()})[1]

    filters()


def _snapshot(user):
    return sorted(Memory.objects.filter(owner=user).values_list("id", "content", "status", "expires_at"))


@pytest.mark.parametrize("expires_at", ["9999-12-31T23:00:00-05:00", "9999-12-31T23:59:59.999999-00:01"])
def test_an_expiry_utc_cannot_hold_is_a_400_and_writes_nothing(api, alice, expires_at):
    before = _snapshot(alice)
    response = api(alice).post(
        "/api/users/me/memories/", {"kind": "fact", "content": "Ends late", "expires_at": expires_at}, format="json"
    )
    assert response.status_code == 400, response.content
    assert _snapshot(alice) == before
    # the services' own reading (mem0's expiration_date, imports): the same refusal, by name
    added = api(alice).post(
        "/v1/memories/", {"messages": "Ends late", "infer": False, "expiration_date": expires_at}, format="json"
    )
    assert added.status_code == 400 and "outside the years 1 to 9999 in UTC" in added.content.decode()
    assert _snapshot(alice) == before


def test_an_expiry_written_with_a_large_offset_is_kept_as_its_instant(api, alice):
    response = api(alice).post(
        "/api/users/me/memories/",
        {"kind": "fact", "content": "Ends on time", "expires_at": "2999-06-01T03:00:00-20:49"},
        format="json",
    )
    assert response.status_code == 201, response.content
    kept = Memory.objects.get(pk=response.json()["id"]).expires_at
    assert kept == datetime(2999, 6, 1, 23, 49, tzinfo=UTC)


def test_mem0s_date_filters_utc_cannot_hold_are_400s(api, alice):
    client = api(alice)
    for moment in ("0001-01-01T00:30:00+05:00", "9999-12-31T23:00:00-05:00"):
        searched = client.post(
            "/v2/memories/",
            {"filters": {"AND": [{"user_id": "alice"}, {"created_at": {"gte": moment}}]}},
            format="json",
        )
        assert searched.status_code == 400 and "outside the years 1 to 9999" in searched.content.decode()
    memory_create(actor=alice, tier=Tier.USER, kind="fact", content="I keep a diary", origin=Origin.API)
    far = {"filters": {"AND": [{"user_id": "alice"}, {"created_at": {"gte": "2020-01-01T15:11:00-20:49"}}]}}
    found = client.post("/v2/memories/", far, format="json")
    assert found.status_code == 200 and [m["memory"] for m in found.json()] == ["I keep a diary"]


def test_never_written_as_the_last_day_of_9999_is_kept_as_the_last_instant_every_zone_shows(api, alice, client):
    """9999-12-31T23:59:59Z (or mem0's 9999-12-31) is the year 10000 in Tokyo: it is kept as the
    last instant every zone shows, and the identity context and the web pages show it there."""
    profile_update(user=alice, timezone="Asia/Tokyo")
    rest = api(alice).post(
        "/api/users/me/memories/",
        {"kind": "fact", "content": "Never ends", "expires_at": "9999-12-31T23:59:59Z"},
        format="json",
    )
    assert rest.status_code == 201, rest.content
    mem0 = api(alice).post(
        "/v1/memories/", {"messages": "I keep a diary", "infer": False, "expiration_date": "9999-12-31"}, format="json"
    )
    assert mem0.status_code == 200, mem0.content
    kept = Memory.objects.filter(owner=alice).values_list("expires_at", flat=True)
    assert set(kept) == {SHOWN_LAST}
    assert api(alice).get("/api/users/me/identity-context").status_code == 200
    client.force_login(alice)
    assert client.get(f"/memory/items/{rest.json()['id']}/").status_code == 200
    assert client.get("/memory/items/", {"source": "user"}).status_code == 200


def test_a_statement_bounded_past_the_calendars_end_is_kept_without_an_expiry(api, alice):
    """ "until December 9999" reads as a date whose end no date can be: the statement is kept as
    it is said, unbounded (it was a 500, and in the worker a lost run)."""
    profile_update(user=alice, timezone="America/New_York")
    for text in ("I live in Lisbon until December 9999.", "I live in Porto until 31 December 9999."):
        added = api(alice).post("/v1/memories/", {"messages": text, "infer": True}, format="json")
        assert added.status_code == 200, added.content
    assert Memory.objects.filter(owner=alice).exists()
    assert all(e is None or shown_everywhere(e) for e in Memory.objects.values_list("expires_at", flat=True))


@pytest.mark.parametrize("sent_at", ["0001-01-01T05:00:00Z", "0001-01-01T00:00:00+00:00"])
def test_a_message_said_before_every_zones_calendar_is_refused(api, svc, alice, sent_at):
    client = api(svc)
    conversation = client.post("/api/conversations", {"user": "alice", "title": "t"}, format="json").json()["id"]
    response = client.post(
        f"/api/conversations/{conversation}/messages",
        {"role": "user", "content": "hello", "sent_at": sent_at},
        format="json",
    )
    assert response.status_code == 400 and response.json()["error"]["code"] == "invalid_sent_at"
    assert not Message.objects.filter(conversation_id=conversation).exists()


@pytest.mark.parametrize(
    "bound",
    ["created_at__gte=2026-01-01T15:11:00-20:49", "created_at__lt=9999-12-31T23:00:00-05:00", "created_at__gte=soon"],
)
def test_the_admins_date_filter_reads_its_bounds_as_the_api_does(client, admin, alice, bound):
    memory_create(actor=alice, tier=Tier.USER, kind="fact", content="A fact", origin=Origin.API)
    client.force_login(admin)
    response = client.get(f"/admin/memory_app/memory/?{bound}")
    # the instant, or the admin's own "incorrect lookup" (a redirect to ?e=1): never a 500
    assert response.status_code in (200, 302), response.status_code
    if "-20:49" in bound:
        assert response.status_code == 200 and "A fact" in response.content.decode()


def test_rows_kept_before_the_writers_held_instants_to_every_zone_are_brought_inside(api, alice, client):
    """Migration 0029: an expiry or a ``sent_at`` written before this rule (put here as the old
    writers did, past the rule) is brought to the nearer instant every zone shows; the others
    are left as they were, and the pages of a user in Tokyo show them."""
    migration = importlib.import_module("memory_app.migrations.0029_instants_every_zone_shows")
    profile_update(user=alice, timezone="Asia/Tokyo")
    never, soon = (
        memory_create(actor=alice, tier=Tier.USER, kind="fact", content=text, origin=Origin.API)
        for text in ("Never ends", "Ends soon")
    )
    ends = datetime(2030, 1, 1, tzinfo=UTC)
    Memory.objects.filter(pk=never.pk).update(expires_at=datetime(9999, 12, 31, 23, 59, 59, tzinfo=UTC))
    Memory.objects.filter(pk=soon.pk).update(expires_at=ends)
    conversation = ConversationFactory(owner=alice)
    late, early, said = (
        Message.objects.create(conversation=conversation, role="user", content=text) for text in ("a", "b", "c")
    )
    Message.objects.filter(pk=late.pk).update(sent_at=datetime(9999, 12, 31, 20, 0, tzinfo=UTC))
    Message.objects.filter(pk=early.pk).update(sent_at=datetime(1, 1, 1, 3, 0, tzinfo=UTC))
    Message.objects.filter(pk=said.pk).update(sent_at=ends)

    migration.keep_instants_every_zone_shows(django_apps, None)

    assert Memory.objects.get(pk=never.pk).expires_at == SHOWN_LAST
    assert Memory.objects.get(pk=soon.pk).expires_at == ends
    sent = dict(Message.objects.filter(conversation=conversation).values_list("pk", "sent_at"))
    assert sent == {late.pk: SHOWN_LAST, early.pk: SHOWN_FIRST, said.pk: ends}
    assert migration.SHOWN_FIRST == SHOWN_FIRST and migration.SHOWN_LAST == SHOWN_LAST
    assert api(alice).get("/api/users/me/identity-context").status_code == 200
    client.force_login(alice)
    assert client.get(f"/memory/items/{never.id}/").status_code == 200


def test_an_expiry_change_recorded_before_the_writers_held_it_still_shows(alice, client):
    """A change record keeps the expiry it set as written: one set to 9999-12-31T23:59:59Z before
    the writers held expiries to the range (found by a review) made the item's page a 500 in
    Tokyo, after the migration too. Every page and context block shows an instant held to what
    every zone shows (``config.instants.shown``), whatever was kept."""
    profile_update(user=alice, timezone="Asia/Tokyo")
    memory = memory_create(actor=alice, tier=Tier.USER, kind="fact", content="Never ends", origin=Origin.API)
    never = datetime(9999, 12, 31, 23, 59, 59, tzinfo=UTC)
    MemoryChange.objects.create(memory=memory, field="expires_at", new_value=never.isoformat(), changed_by=alice)
    client.force_login(alice)
    page = client.get(f"/memory/items/{memory.id}/")
    assert page.status_code == 200 and 'datetime="9999-12-31T23:59:59+00:00"' in page.content.decode()


zones = st.sampled_from(["Asia/Tokyo", "Pacific/Kiritimati", "Etc/GMT+12", "America/St_Johns", "UTC"])


@hypothesis_settings(max_examples=200, deadline=None)
@given(
    moment=st.datetimes(min_value=datetime(1, 1, 1), max_value=datetime(9999, 12, 31, 23, 59, 59)).map(
        lambda naive: naive.replace(tzinfo=UTC)
    ),
    zone=zones,
)
@example(moment=datetime(9999, 12, 31, 23, 59, 59, tzinfo=UTC), zone="Pacific/Kiritimati")
@example(moment=datetime(1, 1, 1, tzinfo=UTC), zone="Etc/GMT+12")
@example(moment=datetime(9999, 12, 31, 23, 59, 59, tzinfo=UTC), zone="UTC")
def test_any_instant_kept_shows_in_any_zone(moment, zone):
    """What the pages (``when``, ``until``) and the agents' context lines (``when_label``) show,
    for any instant of the years 1 to 9999 in UTC, in the zones furthest from it."""
    with timezone_override(zone):
        assert moment.isoformat() in ui.when(moment) and moment.isoformat() in ui.until(moment)
        if zone == "UTC":  # a zone that can show it shows it as it is (found by a review)
            assert f">{moment.isoformat()[:10]} {moment.isoformat()[11:16]} UTC<" in ui.when(moment)
    label = timing.when_label(created_at=moment, expires_at=moment, zone=zoneinfo.ZoneInfo(zone))
    assert label.startswith("[") and "until" in label
    with pytest.raises(ValueError, match="aware"):  # as Django's localtime: never read as local
        in_zone(moment.replace(tzinfo=None), zoneinfo.ZoneInfo(zone))
    if zone == "UTC":
        assert label.startswith(f"[{moment.isoformat()[:10]}")
