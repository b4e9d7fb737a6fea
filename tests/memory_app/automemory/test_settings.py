import pytest

from memory_app.automemory.models import AUTO_MEMORY_DEFAULTS, AutoMemorySettings
from memory_app.automemory.selectors import effective_flags
from memory_app.runs.models import AgentRun
from tests.factories import AgentRunFactory
from tests.memory_app.automemory.helpers import enable

pytestmark = pytest.mark.django_db

URL = "/api/users/me/auto-memory-settings"


def test_settings_default_off_and_reading_writes_nothing(api, alice):
    response = api(alice).get(URL)
    assert response.status_code == 200
    assert response.json() == AUTO_MEMORY_DEFAULTS
    assert response.json()["generate"] is False and response.json()["use"] is False
    assert not AutoMemorySettings.objects.exists()


def test_settings_put_changes_only_given_fields(api, alice):
    client = api(alice)
    response = client.put(URL, {"generate": True, "min_idle_minutes": 0, "extract_model": " gpt-x "}, format="json")
    assert response.status_code == 200, response.content
    body = response.json()
    assert (body["generate"], body["use"], body["min_idle_minutes"], body["extract_model"]) == (True, False, 0, "gpt-x")
    response = client.put(URL, {"use": True}, format="json")
    assert response.json()["generate"] is True and response.json()["use"] is True
    row = AutoMemorySettings.objects.get(user=alice)
    assert (row.generate, row.use, row.min_idle_minutes, row.min_length_chars) == (True, True, 0, 200)


def test_trailing_slash_is_optional(api, alice):
    assert api(alice).get(URL + "/").status_code == 200


@pytest.mark.parametrize(
    "body",
    [
        {"generate": "yes"},
        {"generate": 1},
        {"use": None},
        {"min_idle_minutes": -1},
        {"min_idle_minutes": "5"},
        {"min_idle_minutes": 1.5},
        {"min_quota_remaining_pct": 101},
        {"min_length_chars": 10**9},
        {"extract_model": "m" * 201},
        {"extract_model": 5},
        {"unknown": 1},
        ["generate"],
    ],
)
def test_invalid_settings_are_400_and_change_nothing(api, alice, body):
    client = api(alice)
    client.put(URL, {"min_idle_minutes": 7}, format="json")
    response = client.put(URL, body, format="json")
    assert response.status_code == 400
    assert "error" in response.json()
    row = AutoMemorySettings.objects.get(user=alice)
    assert (row.generate, row.use, row.min_idle_minutes, row.extract_model) == (False, False, 7, "")


def test_settings_need_authentication(api):
    assert api().get(URL).status_code in (401, 403)
    assert api().put(URL, {"generate": True}, format="json").status_code in (401, 403)
    assert not AutoMemorySettings.objects.exists()


def test_settings_are_per_user(api, alice, bob):
    api(alice).put(URL, {"generate": True, "use": True}, format="json")
    assert api(bob).get(URL).json()["generate"] is False


# --- per-run flags -------------------------------------------------------------------------
def flags_url(run_id):
    return f"/api/tasks/{run_id}/auto-memory-flags"


def test_flags_set_and_reset_to_inherit(api, alice):
    run = AgentRunFactory(user=alice)
    client = api(alice)
    response = client.post(flags_url(run.pk), {"generate": True, "use": False}, format="json")
    assert response.status_code == 200, response.content
    body = response.json()
    assert (body["generate"], body["use"]) == (True, False)
    assert body["effective"] == {"generate": True, "use": False}
    run.refresh_from_db()
    assert (run.auto_memory_generate, run.auto_memory_use) == (True, False)
    # Omitted = unchanged; null = inherit.
    response = client.post(flags_url(run.pk), {"use": None}, format="json")
    assert (response.json()["generate"], response.json()["use"]) == (True, None)
    run.refresh_from_db()
    assert (run.auto_memory_generate, run.auto_memory_use) == (True, None)


def test_other_users_run_flags_are_404_and_unchanged(api, alice, mallory):
    run = AgentRunFactory(user=alice)
    response = api(mallory).post(flags_url(run.pk), {"generate": True}, format="json")
    assert response.status_code == 404
    assert response.json()["error"]["code"] == "not_found"
    run.refresh_from_db()
    assert run.auto_memory_generate is None


def test_unknown_run_flags_are_404(api, alice):
    assert api(alice).post(flags_url("run_nope"), {"generate": True}, format="json").status_code == 404


@pytest.mark.parametrize("body", [{"generate": "true"}, {"use": 0}, {"other": True}, "x"])
def test_invalid_flags_are_400_and_unchanged(api, alice, body):
    run = AgentRunFactory(user=alice, auto_memory_use=True)
    response = api(alice).post(flags_url(run.pk), body, format="json")
    assert response.status_code == 400
    run.refresh_from_db()
    assert (run.auto_memory_generate, run.auto_memory_use) == (None, True)


@pytest.mark.parametrize(
    ("user_value", "run_value", "expected"),
    [(False, None, False), (True, None, True), (False, True, True), (True, False, False)],
)
def test_run_override_beats_user_setting_both_ways(alice, user_value, run_value, expected):
    enable(alice, generate=user_value, use=user_value)
    run = AgentRunFactory(user=alice, auto_memory_generate=run_value, auto_memory_use=run_value)
    flags = effective_flags(run=AgentRun.objects.get(pk=run.pk))
    assert (flags.generate, flags.use) == (expected, expected)


def test_without_settings_row_everything_is_off(alice):
    flags = effective_flags(run=AgentRunFactory(user=alice))
    assert (flags.generate, flags.use) == (False, False)
