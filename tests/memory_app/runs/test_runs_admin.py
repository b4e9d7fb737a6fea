"""Admin of the runs part: the lease-state filter uses the runs-domain rule; the memory switch
cannot be deleted and is changed only through the service (per-user lock)."""

from datetime import timedelta

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from memory_app.notes import selectors, services
from memory_app.notes.models import UserSettings
from memory_app.runs.models import AgentRun
from memory_app.runs.selectors import run_lease_state, runs_with_lease_state

pytestmark = pytest.mark.django_db


def _login(user):
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def runs_in_every_state(make_run, alice):
    now = timezone.now()
    handles = {name: make_run(alice, request_id=name) for name in ("held", "expired", "null", "completed", "queued")}
    AgentRun.objects.filter(pk=handles["expired"].id).update(lease_expires_at=now - timedelta(seconds=1))
    AgentRun.objects.filter(pk=handles["null"].id).update(lease_expires_at=None)
    AgentRun.objects.filter(pk=handles["completed"].id).update(status="completed", lease_expires_at=None)
    AgentRun.objects.filter(pk=handles["queued"].id).update(status="queued", lease_expires_at=now + timedelta(hours=1))
    return {name: handle.id for name, handle in handles.items()}


def test_lease_state_query_agrees_with_run_lease_state(runs_in_every_state):
    all_runs = list(AgentRun.objects.all())
    assert len(all_runs) == 5
    for state in ("held", "expired", "released"):
        by_query = set(runs_with_lease_state(AgentRun.objects.all(), state).values_list("pk", flat=True))
        by_rule = {run.pk for run in all_runs if run_lease_state(run) == state}
        assert by_query == by_rule, state
    assert runs_in_every_state["null"] in set(
        runs_with_lease_state(AgentRun.objects.all(), "expired").values_list("pk", flat=True)
    )


def test_admin_lease_filter_uses_the_shared_rule(admin, runs_in_every_state):
    client = _login(admin)
    body = client.get(reverse("admin:memory_app_agentrun_changelist"), {"lease": "expired"}).content.decode()
    assert runs_in_every_state["expired"] in body and runs_in_every_state["null"] in body
    assert runs_in_every_state["held"] not in body and runs_in_every_state["completed"] not in body


def test_user_settings_cannot_be_deleted_in_the_admin(admin, alice):
    services.user_settings_update(user=alice, enable_memory=False)
    row = UserSettings.objects.get(user=alice)
    client = _login(admin)
    assert client.get(reverse("admin:memory_app_usersettings_delete", args=[row.pk])).status_code == 403
    assert (
        client.post(reverse("admin:memory_app_usersettings_delete", args=[row.pk]), {"post": "yes"}).status_code == 403
    )
    client.post(
        reverse("admin:memory_app_usersettings_changelist"),
        {"action": "delete_selected", "_selected_action": [row.pk], "post": "yes"},
    )
    assert UserSettings.objects.get(user=alice).enable_memory is False
    assert selectors.memory_enabled_for(user_id=alice.pk) is False


def test_operators_cannot_change_the_memory_switch_in_the_admin(admin, alice, bob):
    """The switch is the user's consent: the admin shows it and changes nothing, on the change
    form as on the add form."""
    services.user_settings_update(user=alice, enable_memory=True)
    row = UserSettings.objects.get(user=alice)
    client = _login(admin)
    url = reverse("admin:memory_app_usersettings_change", args=[row.pk])
    page = client.get(url)
    assert page.status_code == 200 and 'name="enable_memory"' not in page.content.decode()
    assert client.post(url, {"enable_memory": "", "user": admin.pk}).status_code == 403
    row.refresh_from_db()
    assert (row.enable_memory, row.user_id) == (True, alice.pk)
    assert selectors.memory_enabled_for(user_id=alice.pk) is True
    add = reverse("admin:memory_app_usersettings_add")
    assert client.post(add, {"user": bob.pk, "enable_memory": ""}).status_code == 403
    assert not UserSettings.objects.filter(user=bob).exists()


def test_non_service_claim_is_refused_the_same_way_whoever_owns_the_run(api, alice, mallory, make_run):
    """The service-principal rule lives in run_claim; no view-level pre-check that answers
    differently for an existing run of someone else."""
    run = make_run(mallory)
    before = AgentRun.objects.values("lease_generation", "worker_id").get(pk=run.id)
    own = make_run(alice)
    for run_id in (run.id, own.id, "run_doesnotexist"):
        response = api(alice).post(f"/api/runs/{run_id}/claim", {"worker_id": "w9"}, format="json")
        assert response.status_code == 403, (run_id, response.content)
        assert response.json()["error"]["code"] == "service_principal_required"
    assert AgentRun.objects.values("lease_generation", "worker_id").get(pk=run.id) == before
