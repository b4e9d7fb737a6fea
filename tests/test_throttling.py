"""API rate limits: each scope answers 429 with Retry-After in the JSON error shape, forged
credentials are limited by address, and API_THROTTLE=off turns every limit off."""

import pytest
from django.core.cache import cache
from django.core.management import call_command
from django.db import connection
from django.test import override_settings

from config import throttling
from tests.test_config import PRODUCTION_ENV, run_manage

pytestmark = pytest.mark.django_db

SESSION = "milky:private:10001"
FORGED = "Token 0123456789abcdef0123456789abcdef0123456789abcdef"


@pytest.fixture
def rates(settings, throttle_clock):
    """Low rates for the scope under test; the others stay out of the way."""

    def set_rates(**low):
        settings.API_THROTTLE = True
        settings.API_THROTTLE_RATES = {
            **dict.fromkeys(("anon", "user", "run", "search"), "100000/minute"),
            **low,
        }

    return set_rates


def assert_throttled(response, *, window=60):
    assert response.status_code == 429, response.content
    error = response.json()["error"]
    assert response.json() == {
        "error": {"code": "throttled", "message": error["message"], "request_id": response["X-Request-ID"]}
    }
    assert "throttled" in response.json()["error"]["message"].lower()
    retry_after = int(response["Retry-After"])
    assert 1 <= retry_after <= window
    return retry_after


def test_anonymous_calls_are_limited_per_address(api, rates):
    rates(anon="3/minute")
    client = api()
    statuses = [client.get("/api/users/me/memories").status_code for _ in range(3)]
    assert statuses == [401, 401, 401]
    assert_throttled(client.get("/api/users/me/memories"))
    # Another address has its own budget.
    assert client.get("/api/users/me/memories", REMOTE_ADDR="10.0.0.9").status_code == 401


def test_300_forged_token_calls_end_in_429(api, rates):
    rates(anon="60/minute")
    client = api()
    statuses = []
    for i in range(300):
        client.credentials(HTTP_AUTHORIZATION=f"Token forged-{i:04d}-0123456789abcdef")
        statuses.append(client.get("/api/users/me/memories").status_code)
    assert statuses[:60] == [401] * 60
    assert set(statuses[60:]) == {429}
    assert_throttled(client.get("/api/users/me/memories"))


def test_forged_run_tokens_are_limited_by_address(api, rates, alice, make_run, run_api):
    rates(anon="5/minute")
    run = make_run(alice)
    client = run_api("forged-run-token")
    statuses = [
        client.post(f"/api/runs/{run.id}/tools/remember_memory", {"content": "x"}, format="json").status_code
        for _ in range(8)
    ]
    assert statuses == [401] * 5 + [429] * 3
    assert_throttled(client.post(f"/api/runs/{run.id}/tools/remember_memory", {"content": "x"}, format="json"))


def test_a_forged_forwarded_for_header_does_not_buy_a_fresh_budget(api, rates):
    rates(anon="3/minute")
    client = api()
    client.credentials(HTTP_AUTHORIZATION=FORGED)
    statuses = [
        client.get("/api/users/me/memories", HTTP_X_FORWARDED_FOR=f"203.0.113.{i}").status_code for i in range(5)
    ]
    assert statuses == [401, 401, 401, 429, 429]


def test_behind_a_trusted_proxy_the_forwarded_address_counts(api, rates, settings):
    rates(anon="2/minute")
    settings.REST_FRAMEWORK = {**settings.REST_FRAMEWORK, "NUM_PROXIES": 1}
    client = api()
    client.credentials(HTTP_AUTHORIZATION=FORGED)

    def call(address):
        return client.get("/api/users/me/memories", HTTP_X_FORWARDED_FOR=f"198.51.100.1, {address}").status_code

    assert [call("203.0.113.1") for _ in range(3)] == [401, 401, 429]
    assert call("203.0.113.2") == 401


def test_ipv6_clients_are_counted_per_64_block(rf):
    one = rf.get("/", REMOTE_ADDR="2001:db8:1:2::1")
    other = rf.get("/", REMOTE_ADDR="2001:db8:1:2:ffff::9")
    elsewhere = rf.get("/", REMOTE_ADDR="2001:db8:1:3::1")
    assert throttling.address_key(one) == throttling.address_key(other) == "2001:db8:1:2::/64"
    assert throttling.address_key(elsewhere) != throttling.address_key(one)
    assert throttling.address_key(rf.get("/", REMOTE_ADDR="::ffff:192.0.2.7")) == "192.0.2.7"


def test_authenticated_calls_are_limited_per_user_across_tokens(api, rates, alice, bob):
    rates(user="3/minute")
    first, second = api(alice), api(alice)
    assert [first.get("/api/users/me/memories").status_code for _ in range(2)] == [200, 200]
    assert second.get("/api/users/me/memories").status_code == 200
    assert_throttled(second.get("/api/users/me/memories"))
    assert_throttled(first.get("/api/users/me/profile"))
    assert api(bob).get("/api/users/me/memories").status_code == 200


def test_a_request_refused_for_its_query_string_counts_and_a_throttled_one_is_a_429(api, rates, alice):
    rates(user="2/minute")
    client = api(alice)
    refused = [client.get("/api/users/me/memories", {"kindd": "fact"}).status_code for _ in range(2)]
    assert refused == [400, 400]
    assert_throttled(client.get("/api/users/me/memories"))
    assert_throttled(client.get("/api/users/me/memories", {"kindd": "fact"}))


def test_the_window_ends_when_retry_after_says(api, rates, alice, throttle_clock):
    rates(user="2/minute")
    client = api(alice)
    assert [client.get("/api/users/me/memories").status_code for _ in range(2)] == [200, 200]
    throttle_clock.now += 15
    retry_after = assert_throttled(client.get("/api/users/me/memories"))
    throttle_clock.now += retry_after
    assert client.get("/api/users/me/memories").status_code == 200


def test_search_endpoint_has_its_own_stricter_scope(api, rates, svc):
    rates(search="2/minute")
    client = api(svc)
    body = {"query": "tea", "session_id": SESSION}
    assert [client.post("/api/memory/search", body, format="json").status_code for _ in range(2)] == [200, 200]
    assert_throttled(client.post("/api/memory/search", body, format="json"))
    # Other endpoints of the same user are not searches.
    assert client.get("/api/users/me/profile").status_code == 200


def test_list_queries_count_as_searches(api, rates, alice):
    rates(search="2/minute")
    client = api(alice)
    for _ in range(5):
        assert client.get("/api/users/me/memories").status_code == 200  # no query: not a search
    assert [client.get("/api/users/me/memories?q=tea").status_code for _ in range(2)] == [200, 200]
    assert_throttled(client.get("/api/users/me/memories?q=coffee"))
    assert client.get("/api/users/me/memories?q=").status_code == 200


def test_run_tools_have_their_own_stricter_scope(rates, alice, make_run, run_api):
    rates(run="3/minute")
    run = make_run(alice)
    client = run_api(run.token)
    tool = f"/api/runs/{run.id}/tools/read_thread_messages"
    statuses = [client.post(tool, {}, format="json").status_code for _ in range(3)]
    assert 429 not in statuses
    assert_throttled(client.post(tool, {}, format="json"))
    assert_throttled(client.get(f"/api/runs/{run.id}/context"))
    # Lease upkeep is not a memory call: the heartbeat is not in the run scope.
    assert client.post(f"/api/runs/{run.id}/heartbeat", {}, format="json").status_code == 200


def test_history_search_tool_counts_against_the_search_scope(rates, alice, make_run, run_api):
    rates(search="2/minute")
    run = make_run(alice)
    client = run_api(run.token)
    search = f"/api/runs/{run.id}/tools/search_thread_messages"
    assert [client.post(search, {"query": "tea"}, format="json").status_code for _ in range(2)] == [200, 200]
    assert_throttled(client.post(search, {"query": "tea"}, format="json"))
    # Other tools are not searches.
    assert client.post(f"/api/runs/{run.id}/tools/read_thread_messages", {}, format="json").status_code != 429


def test_api_throttle_off_disables_every_limit(api, rates, settings, alice, svc, make_run, run_api):
    rates(anon="1/minute", user="1/minute", run="1/minute", search="1/minute")
    settings.API_THROTTLE = False
    forged = api()
    forged.credentials(HTTP_AUTHORIZATION=FORGED)
    user = api(alice)
    service = api(svc)
    run = make_run(alice)
    tools = run_api(run.token)
    search = {"query": "tea", "session_id": SESSION}
    history = f"/api/runs/{run.id}/tools/search_thread_messages"
    for _ in range(5):
        assert forged.get("/api/users/me/memories").status_code == 401
        assert api().get("/api/users/me/memories").status_code == 401
        assert user.get("/api/users/me/memories?q=tea").status_code == 200
        assert service.post("/api/memory/search", search, format="json").status_code == 200
        assert tools.post(history, {"query": "tea"}, format="json").status_code == 200


def test_database_cache_keeps_counters_where_every_process_sees_them(api, rates, alice):
    rates(user="2/minute")
    database_cache = {
        "default": {"BACKEND": "django.core.cache.backends.db.DatabaseCache", "LOCATION": "memory_cache_test"}
    }
    with override_settings(CACHES=database_cache):
        call_command("createcachetable", verbosity=0)
        cache.clear()
        client = api(alice)
        assert [client.get("/api/users/me/memories").status_code for _ in range(2)] == [200, 200]
        assert_throttled(client.get("/api/users/me/memories"))
        with connection.cursor() as cursor:
            cursor.execute("SELECT cache_key FROM memory_cache_test")
            keys = [row[0] for row in cursor.fetchall()]
        assert any(f"throttle:user:user:{alice.pk}:" in key for key in keys)


def test_api_throttle_environment_switch_and_bad_rates(tmp_path):
    env = {**PRODUCTION_ENV, "SQLITE_PATH": str(tmp_path / "db.sqlite3")}
    show = ["shell", "-c", "from django.conf import settings; print(settings.API_THROTTLE)"]
    assert run_manage(*show, env_overrides=env).stdout.split()[-1] == "True"
    assert run_manage(*show, env_overrides={**env, "API_THROTTLE": "off"}).stdout.split()[-1] == "False"
    bad = run_manage("check", env_overrides={**env, "API_THROTTLE_SEARCH": "lots"})
    assert bad.returncode != 0 and "API_THROTTLE_SEARCH" in bad.stderr
    bad = run_manage("check", env_overrides={**env, "CACHE_BACKEND": "redis"})
    assert bad.returncode != 0 and "CACHE_BACKEND" in bad.stderr
