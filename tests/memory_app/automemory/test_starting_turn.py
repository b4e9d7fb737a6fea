"""The extraction of a run reads the user's turn that started it. A runtime posts the turn,
then creates the run, so that message is older than the run and carries no run id."""

import pytest
from django.utils import timezone

from memory_app.automemory.worker import round_run, run_text
from memory_app.runs.models import AgentRun
from tests.memory_app.automemory.helpers import auto_memories, enable

pytestmark = pytest.mark.django_db

DECISION = "We decided to use PostgreSQL 16 for the billing service."


def _post(client, url, body, status=201):
    response = client.post(url, body, format="json")
    assert response.status_code == status, response.content
    return response.json()


def _turn_then_run(service, run_api, *, conversation_id, project, user_text, request_id, reply="Noted."):
    """The runtime's order: the user's message, then the run, then the run's reply."""
    if user_text:
        _post(service, f"/api/conversations/{conversation_id}/messages", {"role": "user", "content": user_text})
    run = _post(
        service,
        "/api/runs",
        {
            "user": "alice",
            "conversation_id": conversation_id,
            "request_id": request_id,
            "kind": "chat",
            "worker_id": "w1",
            "prompt": "Answer the user's latest message.",
            "project_id": project.pk,
        },
    )
    _post(
        service,
        f"/api/conversations/{conversation_id}/messages",
        {"role": "assistant", "content": reply, "run_id": run["id"]},
    )
    _post(run_api(run["run_token"]), f"/api/runs/{run['id']}/finish", {"status": "completed"}, status=200)
    return AgentRun.objects.get(pk=run["id"])


@pytest.fixture
def conversation(api, svc, project):
    body = {"user": "alice", "title": "Ops", "project_id": project.pk}
    return _post(api(svc), "/api/conversations", body)["id"]


def test_the_user_turn_that_started_the_run_is_extracted(api, svc, run_api, alice, project, conversation):
    enable(alice, min_idle_minutes=0, min_duration_seconds=0, min_length_chars=10)
    run = _turn_then_run(
        api(svc), run_api, conversation_id=conversation, project=project, user_text=DECISION, request_id="r1"
    )
    assert DECISION in run_text(run, now=timezone.now())
    [result] = round_run(worker_id="w")
    assert result.outcome == "extracted", result
    assert list(auto_memories(project).values_list("content", flat=True)) == [DECISION]


def test_a_turn_answered_by_an_earlier_run_is_not_read_again(api, svc, run_api, alice, project, conversation):
    service = api(svc)
    first = _turn_then_run(
        service, run_api, conversation_id=conversation, project=project, user_text=DECISION, request_id="r1"
    )
    # A second run with no new user message (e.g. the runtime retries): the turn was the first's.
    second = _turn_then_run(
        service, run_api, conversation_id=conversation, project=project, user_text="", request_id="r2"
    )
    now = timezone.now()
    assert DECISION in run_text(first, now=now)
    assert DECISION not in run_text(second, now=now)
    # A new turn starts a third run: that turn is the third's, and the old one is not.
    third = _turn_then_run(
        service,
        run_api,
        conversation_id=conversation,
        project=project,
        user_text="We always tag releases.",
        request_id="r3",
    )
    text = run_text(third, now=timezone.now())
    assert "We always tag releases." in text and DECISION not in text
