"""Server bugs the client's live tests met, pinned in process."""

import logging

import pytest


@pytest.mark.django_db
def test_import_logs_without_a_reserved_log_record_key(api, alice, bob, caplog):
    """``home import`` logged ``extra={"created": …}``, a key ``logging.LogRecord`` reserves:
    with INFO logging on (production) every import answered 500."""
    caplog.set_level(logging.INFO, logger="memory_app.home.services.importing")
    owner = api(alice)
    owner.post("/api/users/me/memories", {"kind": "fact", "content": "Exported fact"}, format="json")
    exported = owner.get("/api/users/me/export").json()
    document = {"format": exported["format"], "version": exported["version"], "memories": exported["memories"]}
    response = api(bob).post(
        "/api/users/me/import", {**document, "memories": {"user": document["memories"]["user"]}}, format="json"
    )
    assert response.status_code == 200, response.content
    [record] = [r for r in caplog.records if r.getMessage() == "home import"]
    assert record.memories_created == 1


def test_the_schema_documents_the_run_token_of_create_and_claim(client):
    """Create and claim answer with ``run_token``; the schema said they answer a plain run."""
    schema = client.get("/api/schema/?format=json").json()
    for path, code in (("/api/runs/", "201"), ("/api/runs/{run_id}/claim/", "200")):
        ref = schema["paths"][path]["post"]["responses"][code]["content"]["application/json"]["schema"]["$ref"]
        component = schema["components"]["schemas"][ref.rsplit("/", 1)[-1]]
        assert "run_token" in component["properties"] and "run_token" in component["required"]
