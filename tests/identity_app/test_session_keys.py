import pytest

from identity_app.session_keys import ChatAddress, InvalidSessionKey, SessionKey


def test_typed_key_has_a_chat_address():
    key = SessionKey.parse("milky:private:10001")
    assert key.address == ChatAddress("milky", "private", "10001")
    assert key.address.is_typed and key.address.chat_key == "milky:private:10001"
    assert key.lanes == ()


def test_lane_suffix_is_not_part_of_the_chat_key():
    key = SessionKey.parse("milky:private:10001:cron:abc")
    assert key.address.chat_key == "milky:private:10001"
    assert key.lanes == ("cron", "abc")


def test_legacy_two_part_key_is_untyped():
    key = SessionKey.parse("milky:10001")
    assert key.address.target_type == "unknown"
    assert not key.address.is_typed
    with pytest.raises(InvalidSessionKey):
        key.address.chat_key  # noqa: B018


@pytest.mark.parametrize(
    "bad",
    [
        "",
        "milky",
        "milky:",
        ":private:1",
        "milky:private",
        "milky:private:",
        "milky::1",
        " milky:private:1",
        "Milky:private:1",
        "milky:private:1 2",
        "milky:private:a/b",
        "x" * 201,
        None,
        5,
        ["milky:private:1"],
    ],
)
def test_malformed_keys_are_rejected(bad):
    with pytest.raises(InvalidSessionKey) as info:
        SessionKey.parse(bad)
    assert info.value.code == "invalid_session_key" and info.value.status_code == 400


def test_chat_address_parse_refuses_lanes_and_legacy_keys():
    assert ChatAddress.parse("milky:group:42").chat_key == "milky:group:42"
    for bad in ("milky:private:1:cron:x", "milky:10001"):
        with pytest.raises(InvalidSessionKey):
            ChatAddress.parse(bad)


@pytest.mark.parametrize(
    "bad",
    [
        "milky:Private:10001",  # target type in the wrong case
        "milky:PRIVATE:10001:cron:abc",
        "milky:Group:42:x:y",
        "milky:privat:10001",  # mistyped target type: odd lane parts
        "telegram:user:5",  # unknown target type
        "milky:10001:cron",  # incomplete lane
        "milky:private:10001:cron",  # typed key, incomplete lane
        "milky:private:10001:cron:abc:x",
    ],
)
def test_mistyped_keys_are_invalid_not_legacy(bad):
    with pytest.raises(InvalidSessionKey) as info:
        SessionKey.parse(bad)
    assert info.value.code == "invalid_session_key"


@pytest.mark.parametrize(
    ("good", "chat_key", "lanes"),
    [
        ("milky:10001", None, ()),
        ("milky:10001:cron:abc", None, ("cron", "abc")),
        ("milky:private:10001:cron:abc", "milky:private:10001", ("cron", "abc")),
        ("milky:private:2:x:y", "milky:private:2", ("x", "y")),
        ("milky:private:2:x:y:sub:3", "milky:private:2", ("x", "y", "sub", "3")),
    ],
)
def test_lanes_come_in_pairs(good, chat_key, lanes):
    key = SessionKey.parse(good)
    assert key.lanes == lanes
    assert (key.address.chat_key if key.address.is_typed else None) == chat_key
