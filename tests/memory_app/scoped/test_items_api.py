import pytest

from identity_app.models import ChatBinding
from memory_app.memories.models import Memory
from memory_app.scoped.migration import inspect_plan
from memory_app.scoped.models import MemoryCandidate

pytestmark = pytest.mark.django_db

A = "milky:private:10001"
B = "milky:private:20002"


def post_item(client, **body):
    return client.post("/api/memory/items", body, format="json")


def test_preference_goes_to_the_sessions_chat_scope(api, svc):
    response = post_item(api(svc), content="I like green tea", kind="preference", session_id=f"{A}:cron:abc")
    assert response.status_code == 201, response.content
    body = response.json()
    assert (body["scope_type"], body["scope_id"], body["kind"]) == ("chat", A, "preference")
    assert body["evidence"]["source_session_id"] == f"{A}:cron:abc"


def test_decision_from_a_chat_goes_to_global_when_the_deployment_shares_directly(api, svc, settings):
    settings.MEMORY_CHAT_TO_GLOBAL = "direct"
    body = post_item(api(svc), content="We chose PostgreSQL", kind="decision", session_id=A).json()
    assert (body["scope_type"], body["scope_id"], body["pending_review"]) == ("global", "__global__", False)


def test_decision_from_a_chat_waits_in_the_chat_for_review(api, svc):
    body = post_item(api(svc), content="We chose PostgreSQL", kind="decision", session_id=A).json()
    assert (body["scope_type"], body["scope_id"], body["pending_review"]) == ("chat", A, True)
    assert not Memory.objects.filter(scope_type="global").exists()


def test_legacy_session_writes_global(api, svc):
    body = post_item(api(svc), content="I like coffee", kind="preference", session_id="milky:10001").json()
    assert body["scope_type"] == "global"


@pytest.mark.parametrize("bad", ["milky:private", "milky", "", "milky::1", "MILKY:private:1", "a:b:c:" + "x" * 300])
def test_malformed_session_is_400_and_nothing_written(api, svc, bad):
    response = post_item(api(svc), content="I like tea", kind="preference", session_id=bad)
    assert response.status_code == 400
    assert response.json()["error"]["code"] in ("invalid_session_key", "invalid")
    assert not Memory.objects.exists()


@pytest.mark.parametrize("key", ["scope_type", "scope_id", "Scope", "scope"])
def test_metadata_cannot_smuggle_a_scope(api, svc, key):
    response = post_item(api(svc), content="I like tea", kind="preference", session_id=A, metadata={key: "global"})
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "scope_in_metadata"
    assert not Memory.objects.exists()


def test_only_staff_may_write_global_directly(api, svc, admin):
    denied = post_item(api(svc), content="Deploy on Fridays is forbidden", kind="warning", scope_type="global")
    assert denied.status_code == 403
    ok = post_item(api(admin), content="Deploy on Fridays is forbidden", kind="preference", scope_type="global")
    assert ok.status_code == 201
    assert ok.json()["scope_type"] == "global"
    assert Memory.objects.count() == 1


def test_explicit_chat_scope_type_is_rejected(api, admin):
    response = post_item(api(admin), content="x y z", kind="fact", scope_type="chat", session_id=A)
    assert response.status_code == 400
    assert not Memory.objects.exists()


def test_plain_users_cannot_write_or_probe_scoped_items(api, svc, alice):
    post_item(api(svc), content="I like green tea", kind="preference", session_id=A)
    for kind in ("preference", "decision"):
        response = post_item(api(alice), content="I like green tea", kind=kind, session_id=A)
        assert response.status_code == 403
        assert "green tea" not in response.content.decode()
    assert Memory.objects.count() == 1


def test_duplicate_is_deduplicated_within_the_scope_only(api, svc):
    client = api(svc)
    first = post_item(client, content="I like green tea", kind="preference", session_id=A)
    again = post_item(client, content="i like GREEN tea ", kind="preference", session_id=f"{A}:cron:x")
    assert again.status_code == 200 and again.json()["deduplicated"] is True
    assert again.json()["id"] == first.json()["id"]
    other_chat = post_item(client, content="I like green tea", kind="preference", session_id=B)
    assert other_chat.status_code == 201
    assert Memory.objects.filter(scope_id=B).count() == 1
    assert Memory.objects.count() == 2


@pytest.mark.parametrize(
    "body",
    [
        {"content": "x", "kind": "opinion", "session_id": A},
        {"content": "", "kind": "fact", "session_id": A},
        {"content": "x" * 4001, "kind": "fact", "session_id": A},
        {"content": 5, "kind": "fact", "session_id": A},
        {"content": "x", "kind": "fact", "session_id": A, "metadata": ["a"]},
        {"content": "x", "kind": "fact", "session_id": A, "unknown": 1},
        {"content": "x", "kind": "fact"},
    ],
)
def test_bad_item_input_is_400(api, svc, body):
    response = post_item(api(svc), **body)
    assert response.status_code == 400
    assert "error" in response.json()
    assert not Memory.objects.exists()


def test_unauthenticated_and_forged_tokens_are_rejected(api, client):
    assert post_item(api(), content="x", kind="fact", session_id=A).status_code in (401, 403)
    forged = api()
    forged.credentials(HTTP_AUTHORIZATION="Token mk_forged")
    assert post_item(forged, content="x", kind="fact", session_id=A).status_code == 401
    assert not Memory.objects.exists()


def test_chat_bindings_api(api, svc, alice, bob):
    client = api(svc)
    created = client.post("/api/chat-bindings", {"chat_key": A, "user": "alice"}, format="json")
    assert created.status_code == 201, created.content
    assert client.post("/api/chat-bindings", {"chat_key": A, "user": "bob"}, format="json").status_code == 409
    assert (
        client.post("/api/chat-bindings", {"chat_key": "milky:group:5", "user": "bob"}, format="json").status_code
        == 400
    )
    assert (
        client.post("/api/chat-bindings", {"chat_key": f"{B}:cron:x", "user": "bob"}, format="json").status_code == 400
    )
    # A user may not bind chats, sees only their own bindings and may remove only those.
    assert api(bob).post("/api/chat-bindings", {"chat_key": B, "user": "bob"}, format="json").status_code == 403
    assert api(bob).get("/api/chat-bindings").json()["results"] == []
    binding_id = created.json()["id"]
    assert api(bob).delete(f"/api/chat-bindings/{binding_id}").status_code == 404
    assert api(alice).get("/api/chat-bindings").json()["results"][0]["chat_key"] == A
    assert api(alice).delete(f"/api/chat-bindings/{binding_id}").status_code == 204
    assert not ChatBinding.objects.exists()


def test_explicit_global_still_validates_the_session(api, admin):
    response = post_item(api(admin), content="x y", kind="fact", scope_type="global", session_id="milky:private")
    assert response.status_code == 400
    assert not Memory.objects.exists()


@pytest.mark.parametrize(
    "typo", ["milky:Private:10001", "milky:privat:10001", "telegram:user:5", "milky:PRIVATE:10001:cron:abc"]
)
def test_mistyped_session_key_is_400_never_a_global_write(api, svc, typo):
    client = api(svc)
    response = post_item(client, content="I am allergic to peanuts", kind="preference", session_id=typo)
    assert response.status_code == 400, response.content
    assert response.json()["error"]["code"] == "invalid_session_key"
    searched = client.post("/api/memory/search", {"query": "peanuts", "session_id": typo}, format="json")
    assert searched.status_code == 400 and searched.json()["error"]["code"] == "invalid_session_key"
    consolidated = client.post(
        "/api/memory/consolidate",
        {"session_id": typo, "messages": [{"role": "user", "content": "I prefer aisle seats"}]},
        format="json",
    )
    assert consolidated.status_code == 400 and consolidated.json()["error"]["code"] == "invalid_session_key"
    assert not Memory.objects.exists()
    assert not MemoryCandidate.objects.exists()


@pytest.mark.parametrize(
    ("session", "scope"),
    [
        ("milky:private:10001", ("chat", "milky:private:10001")),
        ("milky:private:10001:cron:abc", ("chat", "milky:private:10001")),
        ("milky:private:2:x:y", ("chat", "milky:private:2")),
        ("milky:10001", ("global", "__global__")),
        ("milky:10001:cron:abc", ("global", "__global__")),
    ],
)
def test_seed_session_keys_still_resolve(api, svc, session, scope):
    response = post_item(api(svc), content="I like oolong tea", kind="preference", session_id=session)
    assert response.status_code == 201, response.content
    assert (response.json()["scope_type"], response.json()["scope_id"]) == scope


@pytest.mark.parametrize(
    "key",
    [
        "source_session_id",
        "session_id",
        "created_from_session_id",
        "requester_session_id",
        "chat_address",
        "source_chat_address",
        "created_from_chat_address",
        "target_chat_address",
        "from_chat_address",
        "message_context",
        "Source_Session_ID",
    ],
)
@pytest.mark.parametrize("field", ["evidence", "metadata"])
def test_caller_cannot_plant_a_migration_clue(api, svc, key, field):
    value = {"channel": "milky", "chat_type": "private", "chat_id": "20002"} if key == "message_context" else B
    response = post_item(
        api(svc), content="I like opera", kind="preference", session_id="milky:10001", **{field: {key: value}}
    )
    assert response.status_code == 400, response.content
    assert response.json()["error"]["code"] == f"scope_in_{field}"
    assert not Memory.objects.exists()


def test_the_system_records_the_real_session_as_evidence(api, svc):
    response = post_item(
        api(svc),
        content="I like opera",
        kind="preference",
        session_id="milky:10001",
        evidence={"quote": "opera, always"},
        metadata={"topic": "music"},
    )
    assert response.status_code == 201, response.content
    assert response.json()["evidence"] == {"quote": "opera, always", "source_session_id": "milky:10001"}
    (entry,) = inspect_plan()["entries"]
    assert (entry["decision"], entry["target_scope_id"]) == ("keep", "")


def test_near_identical_text_is_a_duplicate_within_the_scope(api, svc):
    client = api(svc)
    first = post_item(client, content="I like green tea.", kind="preference", session_id=A)
    for variant in ("i like green-tea", "I  like GREEN tea!!", "Ｉ like green tea"):
        again = post_item(client, content=variant, kind="preference", session_id=A)
        assert again.status_code == 200 and again.json()["id"] == first.json()["id"], variant
    assert post_item(client, content="I like green tea a lot", kind="preference", session_id=A).status_code == 201
    assert post_item(client, content="i like green-tea", kind="preference", session_id=B).status_code == 201
    assert Memory.objects.filter(scope_id=A).count() == 2 and Memory.objects.filter(scope_id=B).count() == 1


def test_long_texts_differing_late_are_not_duplicates(api, svc):
    client = api(svc)
    base = "I like " + "very " * 60
    assert post_item(client, content=base + "green tea", kind="preference", session_id=A).status_code == 201
    assert post_item(client, content=base + "black tea", kind="preference", session_id=A).status_code == 201
    assert Memory.objects.filter(scope_id=A).count() == 2


def test_staff_flag_alone_cannot_bind_a_chat_and_read_it(api, svc, alice):
    from identity_app.models import ChatBinding
    from memory_app.scoped.services import scoped_item_create
    from tests.factories import UserFactory

    scoped_item_create(actor=svc, session_id=A, kind="preference", content="Alice prefers oat milk")
    ops = UserFactory(username="ops", is_staff=True)
    client = api(ops)
    assert client.post("/api/chat-bindings", {"chat_key": A, "user": "ops"}, format="json").status_code == 403
    assert not ChatBinding.objects.exists()
    search = client.post("/api/memory/search", {"query": "oat milk", "session_id": A}, format="json")
    assert search.status_code in (403, 404) and "oat milk" not in search.content.decode()


def test_staff_flag_alone_cannot_write_global_items(api):
    from django.contrib.auth.models import Permission

    from config.errors import PermissionDenied
    from memory_app.memories import services
    from tests.factories import UserFactory

    ops = UserFactory(username="ops", is_staff=True)
    response = post_item(api(ops), content="Deploy on Fridays is forbidden", kind="warning", scope_type="global")
    assert response.status_code == 403 and response.json()["error"]["code"] == "permission_denied"
    with pytest.raises(PermissionDenied):
        services.memory_create(actor=ops, tier="global", kind="warning", content="Deploy on Fridays is forbidden")
    assert not Memory.objects.exists()
    # The explicit permission is what allows it.
    ops.user_permissions.add(Permission.objects.get(codename="write_global_memories"))
    ops = type(ops).objects.get(pk=ops.pk)  # drop the cached permissions
    response = post_item(api(ops), content="Deploy on Fridays is forbidden", kind="warning", scope_type="global")
    assert response.status_code == 201 and response.json()["scope_type"] == "global"


def test_staff_flag_alone_cannot_correct_or_forget_global_items(api):
    from config.errors import PermissionDenied
    from memory_app.memories import services
    from tests.factories import GlobalMemoryFactory, UserFactory

    item = GlobalMemoryFactory(content="Backups run at 02:00")
    ops = UserFactory(username="ops", is_staff=True)
    with pytest.raises(PermissionDenied):
        services.memory_supersede(actor=ops, memory_id=item.pk, content="Backups run at 03:00")
    with pytest.raises(PermissionDenied):
        services.memory_forget(actor=ops, memory_id=item.pk)
    assert list(Memory.objects.values_list("content", "status")) == [("Backups run at 02:00", "active")]
