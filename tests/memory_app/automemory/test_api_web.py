"""Manual round and log through the API; the settings, log and run-flags pages; admin."""

import pytest
from django.conf import settings
from django.urls import reverse

from memory_app.automemory.models import AutoMemoryLogEntry, AutoMemorySettings
from memory_app.runs.models import AgentRun
from tests.factories import AgentRunFactory
from tests.memory_app.automemory.helpers import auto_memories, enable, finished_run, manual_round

pytestmark = pytest.mark.django_db

RUN_URL = "/api/users/me/auto-memory/run"
LOG_URL = "/api/users/me/auto-memory-log"


def test_manual_round_processes_only_the_callers_runs(api, alice, bob, project):
    enable(alice)
    enable(bob)
    mine = finished_run(user=alice, project=project)
    theirs = finished_run(user=bob, project=project)
    [result] = manual_round(api(alice))["processed"]
    assert (result["run_id"], result["outcome"], len(result["memory_ids"])) == (mine.pk, "extracted", 2)
    theirs.refresh_from_db()
    assert theirs.auto_memory_processed_at is None
    assert not AutoMemoryLogEntry.objects.filter(user=bob).exists()


def test_manual_round_with_defaults_off_does_nothing(api, alice, project):
    finished_run(user=alice, project=project)
    assert manual_round(api(alice)) == {"processed": [], "stopped": "", "left": 0}
    assert not auto_memories().exists()


def test_manual_round_is_bounded(api, alice, project):
    enable(alice, min_length_chars=100000)  # every run stops at the length gate (cheap)
    limit = settings.AUTO_MEMORY_MANUAL_ROUND_LIMIT
    assert limit == 5
    for _ in range(limit + 2):
        finished_run(user=alice, project=project)
    first = manual_round(api(alice))
    assert (len(first["processed"]), first["stopped"], first["left"]) == (limit, "", 2)
    second = manual_round(api(alice))
    assert (len(second["processed"]), second["left"]) == (2, 0)


def test_manual_round_needs_authentication(api, alice, project):
    enable(alice)
    finished_run(user=alice, project=project)
    assert api().post(RUN_URL).status_code in (401, 403)
    assert not auto_memories().exists()


def test_log_lists_outcomes_of_the_caller_only(api, alice, bob, project):
    enable(alice)
    enable(bob)
    finished_run(user=alice, project=project)
    finished_run(user=alice, project=None)
    finished_run(user=bob, project=project)
    manual_round(api(alice))
    manual_round(api(bob))
    body = api(alice).get(LOG_URL).json()
    assert body["count"] == 3
    outcomes = sorted(e["outcome"] for e in body["results"])
    assert outcomes == ["extracted", "extracted", "skipped"]
    assert {e["run_id"] for e in body["results"]} <= set(
        AgentRun.objects.filter(user=alice).values_list("pk", flat=True)
    )
    skipped = api(alice).get(LOG_URL, {"outcome": "skipped"}).json()
    assert skipped["count"] == 1 and "no project" in skipped["results"][0]["reason"]
    assert api(bob).get(LOG_URL).json()["count"] == 2


def test_log_is_paginated_and_validates_filters(api, alice, project):
    enable(alice, min_length_chars=100000)
    for _ in range(5):
        finished_run(user=alice, project=project)
    manual_round(api(alice))
    page = api(alice).get(LOG_URL, {"page_size": 2}).json()
    assert (page["count"], len(page["results"])) == (5, 2) and page["next"]
    assert page["results"][0]["gate"] == "length"
    assert api(alice).get(LOG_URL, {"outcome": "bogus"}).status_code == 400
    assert api(alice).get(LOG_URL, {"page": 99}).status_code == 404


# --- pages ---------------------------------------------------------------------------------
def test_pages_need_login(client, alice):
    run = AgentRunFactory(user=alice)
    for url in (
        reverse("web:auto_memory_settings"),
        reverse("web:auto_memory_log"),
        reverse("web:run_auto_memory_flags", kwargs={"run_id": run.pk}),
    ):
        response = client.get(url)
        assert response.status_code == 302 and "login" in response["Location"]


def test_settings_page_shows_and_saves(client, alice):
    client.force_login(alice)
    page = client.get(reverse("web:auto_memory_settings"))
    assert page.status_code == 200 and b"Auto-memory" in page.content
    response = client.post(
        reverse("web:auto_memory_settings"),
        {
            "generate": "on",
            "min_idle_minutes": 5,
            "min_duration_seconds": 0,
            "min_length_chars": 50,
            "min_quota_remaining_pct": 10,
            "extract_model": "m",
            "consolidation_model": "",
        },
    )
    assert response.status_code == 302
    row = AutoMemorySettings.objects.get(user=alice)
    # The switches are on the one switches panel: this page leaves them as they were (off).
    assert (row.generate, row.use, row.min_idle_minutes, row.min_length_chars, row.redact_contact_info) == (
        False,
        False,
        5,
        50,
        False,
    )


def test_settings_page_rejects_bad_values(client, alice):
    client.force_login(alice)
    response = client.post(
        reverse("web:auto_memory_settings"),
        {"min_idle_minutes": -1, "min_duration_seconds": 0, "min_length_chars": 0, "min_quota_remaining_pct": 500},
    )
    assert response.status_code == 400  # like every other form page
    assert not AutoMemorySettings.objects.exists()


def test_log_page_lists_own_entries(client, alice, bob, project):
    enable(alice)
    enable(bob, min_length_chars=100000)
    finished_run(user=alice, project=project)
    finished_run(user=bob, project=project)
    from memory_app.automemory.worker import round_run

    round_run(worker_id="t")
    client.force_login(alice)
    page = client.get(reverse("web:auto_memory_log"))
    assert page.status_code == 200
    assert b"PostgreSQL 16" in page.content and b"conversation too short" not in page.content


def test_run_flags_page_sets_flags_and_other_users_run_is_404(client, alice, mallory):
    run = AgentRunFactory(user=alice)
    url = reverse("web:run_auto_memory_flags", kwargs={"run_id": run.pk})
    client.force_login(mallory)
    assert client.get(url).status_code == 404
    assert client.post(url, {"generate": "on", "use": "off"}).status_code == 404
    run.refresh_from_db()
    assert (run.auto_memory_generate, run.auto_memory_use) == (None, None)
    client.force_login(alice)
    assert client.get(url).status_code == 200
    assert client.post(url, {"generate": "on", "use": "off"}).status_code == 302
    run.refresh_from_db()
    assert (run.auto_memory_generate, run.auto_memory_use) == (True, False)
    client.post(url, {"generate": "inherit", "use": "inherit"})
    run.refresh_from_db()
    assert (run.auto_memory_generate, run.auto_memory_use) == (None, None)


def test_nav_links_appear(client, alice):
    client.force_login(alice)
    page = client.get(reverse("web:auto_memory_settings")).content.decode()
    assert reverse("web:auto_memory_log") in page


def test_admin_pages_render(client, admin, alice, project):
    enable(alice)
    finished_run(user=alice, project=project)
    from memory_app.automemory.worker import round_run

    round_run(worker_id="t")
    client.force_login(admin)
    for name in ("automemorysettings", "automemorylogentry", "automemoryclaim"):
        assert client.get(f"/admin/memory_app/{name}/").status_code == 200
    entry = AutoMemoryLogEntry.objects.first()
    assert client.get(f"/admin/memory_app/automemorylogentry/{entry.pk}/change/").status_code == 200


def _admin_settings_form(row: AutoMemorySettings, **changes) -> dict:
    data = {
        "user": row.user_id,
        "extract_model": row.extract_model,
        "consolidation_model": row.consolidation_model,
        "min_idle_minutes": row.min_idle_minutes,
        "min_duration_seconds": row.min_duration_seconds,
        "min_length_chars": row.min_length_chars,
        "min_quota_remaining_pct": row.min_quota_remaining_pct,
    }
    for name in ("generate", "use", "redact_contact_info"):
        if getattr(row, name):
            data[name] = "on"
    data.update(changes)
    return data


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("min_idle_minutes", 7 * 24 * 60 + 1),
        ("min_duration_seconds", 24 * 60 * 60 + 1),
        ("min_length_chars", 1_000_001),
        ("min_quota_remaining_pct", 1000),
        ("min_quota_remaining_pct", 101),
    ],
)
def test_admin_refuses_thresholds_beyond_the_limits(client, admin, alice, field, value):
    enable(alice)
    row = AutoMemorySettings.objects.get(user=alice)
    before = {f.attname: getattr(row, f.attname) for f in row._meta.concrete_fields}
    client.force_login(admin)
    url = f"/admin/memory_app/automemorysettings/{row.pk}/change/"
    response = client.post(url, _admin_settings_form(row, **{field: value, "generate": ""}))
    assert response.status_code == 200  # the form again, with the error
    assert field in response.context["adminform"].form.errors
    row.refresh_from_db()
    assert {f.attname: getattr(row, f.attname) for f in row._meta.concrete_fields} == before


def test_admin_saves_thresholds_at_the_limit(client, admin, alice):
    enable(alice)
    row = AutoMemorySettings.objects.get(user=alice)
    client.force_login(admin)
    url = f"/admin/memory_app/automemorysettings/{row.pk}/change/"
    response = client.post(url, _admin_settings_form(row, min_idle_minutes=7 * 24 * 60, min_quota_remaining_pct=100))
    assert response.status_code == 302, response.content
    row.refresh_from_db()
    assert (row.min_idle_minutes, row.min_quota_remaining_pct) == (7 * 24 * 60, 100)


def test_admin_cannot_add_settings_beyond_the_limits(client, admin, alice):
    client.force_login(admin)
    row = AutoMemorySettings(user=alice)
    response = client.post(
        "/admin/memory_app/automemorysettings/add/", _admin_settings_form(row, min_length_chars=5_000_000)
    )
    assert response.status_code == 200
    assert not AutoMemorySettings.objects.filter(user=alice).exists()


def test_operators_cannot_change_the_auto_memory_switches_in_the_admin(client, admin, alice):
    """``generate`` and ``use`` are the user's consent: a staff POST of the change form keeps them,
    while the thresholds beside them still save."""
    enable(alice)
    row = AutoMemorySettings.objects.get(user=alice)
    assert (row.generate, row.use) == (True, True)
    client.force_login(admin)
    url = f"/admin/memory_app/automemorysettings/{row.pk}/change/"
    page = client.get(url).content.decode()
    assert 'name="generate"' not in page and 'name="use"' not in page
    response = client.post(url, {**_admin_settings_form(row, min_idle_minutes=42), "generate": "", "use": ""})
    assert response.status_code == 302, response.content
    row.refresh_from_db()
    assert (row.generate, row.use, row.min_idle_minutes) == (True, True, 42)
