"""``manage.py mcp_server --http``: streamable HTTP on its own port, driven by the MCP SDK's
own client (and by plain HTTP for what must be refused before the MCP app sees a request)."""

import json
import os
import signal
import socket
import subprocess
import time

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from memory_app.runs.models import AgentRun, RunStatus
from tests.lowtrust_frames import block_lines
from tests.memory_app.mcp.conftest import ALICE_CHAT, MANAGE, ROOT, closing_its_connections, key_for, server_env
from tests.memory_app.mcp.test_stdio import TIMEOUT, notes, ok, refused
from tests.memory_app.mcp.test_tools import SERVICE_TOOLS, USER_TOOLS

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
}
ACCEPT = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


IDLE_SECONDS = 5


@pytest.fixture
def http_url(shared_db, workspace_root):
    port = free_port()
    process = subprocess.Popen(
        [*MANAGE, "--http", "--port", str(port)],
        cwd=ROOT,
        # A session's run is finished after 5 s without a call (30 s by default).
        env=server_env(shared_db, workspace_root, MCP_HTTP_RUN_IDLE_SECONDS=str(IDLE_SECONDS)),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    url = f"http://127.0.0.1:{port}/mcp"
    try:
        deadline = time.monotonic() + TIMEOUT
        while True:
            assert process.poll() is None, process.stdout.read()
            try:
                httpx2.post(url, json=INITIALIZE, headers=ACCEPT, timeout=5, trust_env=False)
                break
            except httpx2.TransportError:
                assert time.monotonic() < deadline, "the MCP HTTP server did not answer"
                time.sleep(0.2)
        yield url
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


def http_client(url: str, headers: dict, **options) -> Client:
    http = httpx2.AsyncClient(headers=headers, timeout=TIMEOUT, trust_env=False)
    return Client(streamable_http_client(url, http_client=http), read_timeout_seconds=TIMEOUT, **options)


def post(url: str, headers: dict) -> httpx2.Response:
    return httpx2.post(url, json=INITIALIZE, headers={**ACCEPT, **headers}, timeout=TIMEOUT, trust_env=False)


def alice_auth(alice) -> dict:
    return {"Authorization": f"Token {key_for(alice)}"}


def test_http_transport(http_url, world, alice, bob, svc, workspace_root, monkeypatch):
    # Every request is authenticated before the MCP app sees it.
    for headers, status, code in [
        ({}, 401, "not_authenticated"),
        ({"Authorization": "Token forged-key"}, 401, "authentication_failed"),
        ({"Authorization": "Bearer something"}, 401, "not_authenticated"),
        ({"Authorization": f"Token {key_for(svc)}"}, 403, "user_required"),
        ({"Authorization": f"Token {key_for(svc)}", "X-Memory-User": "nobody"}, None, "unknown_user"),
        ({"Authorization": f"Token {key_for(alice)}", "X-Memory-User": "bob"}, 403, "not_your_account"),
    ]:
        response = post(http_url, headers)
        assert response.json()["error"]["code"] == code, response.text
        assert response.status_code == (status or response.status_code) and response.status_code >= 400
        if status == 401:
            assert response.headers["www-authenticate"] == "Token"
    assert post(http_url, {"Authorization": f"Token {key_for(alice)}"}).status_code == 200
    oversized = httpx2.post(
        http_url,
        content=b"[" + b" " * (1024 * 1024) + b"]",
        headers={**ACCEPT, "Authorization": f"Token {key_for(alice)}"},
        timeout=TIMEOUT,
        trust_env=False,
    )
    assert oversized.status_code == 413  # the REST API's body cap (API_MAX_BODY_BYTES)
    # A JSON body naming a key twice is refused as the REST API refuses it, before the SDK
    # would keep the last value; the same body without the repeat is answered.
    twice = b'{"jsonrpc": "2.0", "id": 1, "method": "tools/list", "method": "initialize", "params": {}}'
    duplicated = httpx2.post(
        http_url, content=twice, headers={**ACCEPT, **alice_auth(alice)}, timeout=TIMEOUT, trust_env=False
    )
    assert duplicated.status_code == 400 and duplicated.json()["error"]["code"] == "duplicate_key", duplicated.text
    nested = json.dumps(INITIALIZE)[:-1].encode() + b', "params": {"a": 1, "a": 2}}'
    assert (
        httpx2.post(
            http_url, content=nested, headers={**ACCEPT, **alice_auth(alice)}, timeout=TIMEOUT, trust_env=False
        ).json()["error"]["code"]
        == "duplicate_key"
    )
    assert post(http_url, alice_auth(alice)).status_code == 200

    # Sessions of alice, of bob, and of a service principal acting for alice.
    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")  # this test's own queries, between calls
    alice_headers = {"Authorization": f"Token {key_for(alice)}"}
    bob_headers = {"Authorization": f"Token {key_for(bob)}"}
    service_headers = {"Authorization": f"Token {key_for(svc)}", "X-Memory-User": "alice"}

    @closing_its_connections
    async def scenario():
        async with http_client(http_url, alice_headers) as client:
            assert {tool.name for tool in (await client.list_tools()).tools} == USER_TOOLS
            found = await ok(client, "search_memories", {"query": "green tea in the morning"})
            assert found["results"][0]["id"] == world.alice_memory.pk
            added = (await ok(client, "add_memory", {"content": "Alice's favourite city is Porto."}))["memory"]
            assert (await ok(client, "search_memories", {"query": "favourite city"}))["results"][0]["id"] == added["id"]
            assert (await ok(client, "remember_memory", {"content": "Alice's cat is Miso."}))["result"] == "appended"
            for _ in range(5):
                hits = await ok(client, "search_thread_messages", {"query": "airline Lisbon"})
                assert hits["results"][0]["thread_id"] == world.alice_thread.pk
            text = (await client.read_resource("memory://notes/MEMORY.md")).contents[0].text
            assert "Alice's cat is Miso." in block_lines(text)
            assert await refused(client, "search_memories", {"query": ""}) == "invalid_arguments"
            assert await refused(client, "forget_memory", {"memory_id": world.bob_memory.pk}) == "not_found"

        # The session's seven notes-file and history calls shared one run, still open for the next.
        runs = AgentRun.objects.filter(user=alice)
        assert runs.count() == 1 and runs.get().status == RunStatus.RUNNING

        async with http_client(http_url, bob_headers, mode="legacy") as client:  # the handshake era too
            assert {tool.name for tool in (await client.list_tools()).tools} == USER_TOOLS
            found = await ok(client, "search_memories", {"query": "green tea jazz Porto", "limit": 20})
            assert not {world.alice_memory.pk, world.chat_memory.pk, added["id"]} & {h["id"] for h in found["results"]}
            assert await refused(client, "correct_memory", {"memory_id": added["id"], "content": "x"}) == "not_found"
            history = await ok(client, "search_thread_messages", {"query": "airline Lisbon"})
            assert world.alice_thread.pk not in json.dumps(history["results"])

        async with http_client(http_url, service_headers) as client:
            assert {tool.name for tool in (await client.list_tools()).tools} == SERVICE_TOOLS
            assert (await ok(client, "remember_memory", {"content": "Alice flies TAP."}))["result"] == "appended"
            chat = await ok(client, "search_chat_memories", {"session_id": ALICE_CHAT, "query": "jazz"})
            assert chat["results"][0]["id"] == world.chat_memory.pk
            assert await refused(client, "search_memories", {"query": "tea"}) == "unknown_tool"
            assert [str(r.uri) for r in (await client.list_resources()).resources] == ["memory://notes/MEMORY.md"]

    anyio.run(scenario)
    assert b"Alice flies TAP." in notes(workspace_root, alice)
    # Idle sessions end by themselves: their runs are finished, none is left running.
    deadline = time.monotonic() + IDLE_SECONDS + 20
    while AgentRun.objects.filter(status=RunStatus.RUNNING).exists():
        assert time.monotonic() < deadline, list(AgentRun.objects.values_list("id", "status"))
        time.sleep(0.2)
    assert AgentRun.objects.filter(user=alice, created_by=svc, status=RunStatus.COMPLETED).count() == 1
    assert AgentRun.objects.filter(user=alice).count() == 2  # alice's session, the service's for alice
