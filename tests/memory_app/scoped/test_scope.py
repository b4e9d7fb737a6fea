import pytest

from identity_app.session_keys import InvalidSessionKey, SessionKey
from memory_app.scoped.scope import (
    cascade_scopes,
    chat_scope_id,
    resolve_scope_from_session,
    scope_for_kind,
    write_scope,
)


@pytest.mark.parametrize(
    ("session", "expected"),
    [
        ("milky:private:10001", ("chat", "milky:private:10001")),
        ("milky:10001", ("global", "__global__")),
        ("milky:private:10001:cron:abc", ("chat", "milky:private:10001")),
        ("telegram:group:-100123", ("chat", "telegram:group:-100123")),
        ("milky:10001:cron:abc", ("global", "__global__")),
    ],
)
def test_resolve_scope_from_session(session, expected):
    assert resolve_scope_from_session(session) == expected


def test_malformed_session_never_resolves_to_global():
    with pytest.raises(InvalidSessionKey):
        resolve_scope_from_session("milky:private")


@pytest.mark.parametrize(
    ("kind", "scope"),
    [
        ("preference", "chat"),
        ("fact", "chat"),
        ("task", "chat"),
        ("decision", "global"),
        ("procedure", "global"),
        ("warning", "global"),
        ("summary", "global"),
        ("convention", "global"),
    ],
)
def test_scope_for_kind(kind, scope):
    assert scope_for_kind(kind) == scope


def test_chat_scope_id_is_the_chat_key():
    assert chat_scope_id(SessionKey.parse("milky:private:7:cron:x").address) == "milky:private:7"


def test_write_scope_follows_kind_and_legacy_sessions_write_global():
    assert write_scope(session_id="milky:private:1", kind="preference") == ("chat", "milky:private:1")
    assert write_scope(session_id="milky:private:1", kind="decision") == ("global", "__global__")
    assert write_scope(session_id="milky:1", kind="preference") == ("global", "__global__")


def test_cascade_is_chat_then_global_and_legacy_is_global_only():
    assert cascade_scopes("milky:private:1:cron:z") == [("chat", "milky:private:1"), ("global", "__global__")]
    assert cascade_scopes("milky:1") == [("global", "__global__")]
