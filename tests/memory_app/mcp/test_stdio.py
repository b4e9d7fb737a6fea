"""``manage.py mcp_server`` over stdio, driven by the MCP SDK's own client: the server is a
subprocess on a database this process shares (``shared_db``)."""

import json
import subprocess
import sys

import anyio
from django.utils import timezone
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from identity_app.models import ApiToken
from memory_app.runs.models import AgentRun, RunStatus
from tests.lowtrust_frames import block_lines
from tests.memory_app.mcp.conftest import ALICE_CHAT, MANAGE, ROOT, closing_its_connections, key_for, server_env
from tests.memory_app.mcp.test_tools import USER_TOOLS

TIMEOUT = 120


def stdio_client(env: dict) -> Client:
    params = StdioServerParameters(command=sys.executable, args=MANAGE[1:], cwd=str(ROOT), env=env)
    return Client(params, read_timeout_seconds=TIMEOUT)


async def ok(client: Client, name: str, arguments: dict) -> dict:
    result = await client.call_tool(name, arguments)
    assert not result.is_error, result.content
    assert json.loads(result.content[0].text) == result.structured_content
    return result.structured_content


async def refused(client: Client, name: str, arguments: dict) -> str:
    result = await client.call_tool(name, arguments)
    assert result.is_error, result.content
    return result.structured_content["error"]["code"]


def notes(workspace_root, user) -> bytes | None:
    path = workspace_root / str(user.pk) / "agents" / "MEMORY.md"
    return path.read_bytes() if path.exists() else None


def start_refused_sessions(shared_db, workspace_root, svc) -> dict[str, subprocess.Popen]:
    """Sessions that must be refused before they serve: a forged token, and a service token
    that names no user. Started at once; ``check_refused`` collects them."""
    cases = {"authentication_failed": "forged-key", "user_required": key_for(svc)}
    return {
        code: subprocess.Popen(
            MANAGE,
            cwd=ROOT,
            env=server_env(shared_db, workspace_root, MEMORY_API_TOKEN=key),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for code, key in cases.items()
    }


def check_refused(started: dict[str, subprocess.Popen]) -> None:
    initialize = '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}\n'
    for code, process in started.items():
        stdout, stderr = process.communicate(initialize, timeout=TIMEOUT)
        assert process.returncode != 0
        assert stdout == ""  # not a byte of protocol
        assert f"MCP session refused ({code})" in stderr


def test_stdio_sessions(shared_db, world, alice, bob, svc, workspace_root, monkeypatch):
    refused_sessions = start_refused_sessions(shared_db, workspace_root, svc)
    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")  # this test's own queries, between calls
    alice_env = server_env(shared_db, workspace_root, MEMORY_API_TOKEN=key_for(alice))
    bob_env = server_env(shared_db, workspace_root, MEMORY_API_TOKEN=key_for(bob))

    @closing_its_connections
    async def alice_session():
        async with stdio_client(alice_env) as client:
            listed = {tool.name: tool for tool in (await client.list_tools()).tools}
            assert set(listed) == USER_TOOLS
            add = listed["add_memory"].input_schema
            assert add["required"] == ["content"] and add["additionalProperties"] is False
            assert listed["forget_memory"].annotations.destructive_hint
            assert listed["search_memories"].annotations.read_only_hint

            found = await ok(client, "search_memories", {"query": "what does alice drink?"})
            assert found["trust"] == "low" and found["results"][0]["id"] == world.alice_memory.pk
            added = (await ok(client, "add_memory", {"content": "Alice runs on Sundays.", "kind": "fact"}))["memory"]
            corrected = await ok(
                client, "correct_memory", {"memory_id": added["id"], "content": "Alice runs on Saturdays."}
            )
            forgotten = await ok(client, "forget_memory", {"memory_id": corrected["memory"]["id"]})
            assert set(forgotten["forgotten_ids"]) == {added["id"], corrected["memory"]["id"]}
            identity = await ok(client, "get_identity_context", {})
            assert block_lines(identity["identity_context"])

            assert (await ok(client, "remember_memory", {"content": "Alice's cat is Miso."}))["result"] == "appended"
            hits = await ok(client, "search_thread_messages", {"query": "which airline for Lisbon"})
            assert hits["results"][0]["thread_id"] == world.alice_thread.pk
            read = await ok(client, "read_thread_messages", {"thread_id": world.alice_thread.pk})
            assert [m["role"] for m in read["messages"]] == ["user", "assistant"]
            chat = await ok(client, "search_chat_memories", {"session_id": ALICE_CHAT, "query": "jazz"})
            assert chat["results"][0]["id"] == world.chat_memory.pk

            resources = {str(r.uri) for r in (await client.list_resources()).resources}
            assert resources == {"memory://notes/MEMORY.md", "memory://identity-context"}
            text = (await client.read_resource("memory://notes/MEMORY.md")).contents[0].text
            assert "Alice's cat is Miso." in block_lines(text)

            # Nothing of bob's, whatever alice's session asks.
            bobs = await ok(client, "search_memories", {"query": "window seats on long flights", "limit": 20})
            assert world.bob_memory.pk not in json.dumps(bobs["results"])
            assert await refused(client, "forget_memory", {"memory_id": world.bob_memory.pk}) == "not_found"
            assert (
                await refused(client, "read_thread_messages", {"thread_id": world.bob_thread.pk}) == "thread_not_found"
            )

            # Bad input is a tool error, and the session carries on.
            assert await refused(client, "add_memory", {"content": 5}) == "invalid_arguments"
            assert await refused(client, "add_memory", {"content": "x", "owner": "bob"}) == "invalid_arguments"
            assert await refused(client, "no_such_tool", {}) == "unknown_tool"
            assert (await ok(client, "search_memories", {"query": "green tea"}))["results"]

            # Someone finishes the session's run: writes are refused, the file stays as it was.
            run = AgentRun.objects.get(user=alice, status=RunStatus.RUNNING)
            assert run.created_by == alice and run.lease_expires_at is not None
            before = notes(workspace_root, alice)
            AgentRun.objects.filter(pk=run.pk).update(status=RunStatus.CANCELLED, lease_expires_at=None)
            assert await refused(client, "remember_memory", {"content": "Not after the end."}) == "run_not_running"
            assert notes(workspace_root, alice) == before

            # The token is checked at every call: revoked during the session, it stops the session.
            ApiToken.objects.filter(user=alice).update(revoked_at=timezone.now())
            assert await refused(client, "search_memories", {"query": "green tea"}) == "authentication_failed"

    async def bob_session():
        async with stdio_client(bob_env) as client:
            assert (await ok(client, "remember_memory", {"content": "Bob likes aisle seats."}))["result"] == "appended"
            found = await ok(client, "search_memories", {"query": "green tea jazz playlists", "limit": 20})
            assert not {world.alice_memory.pk, world.chat_memory.pk} & {hit["id"] for hit in found["results"]}

    async def both():
        async with anyio.create_task_group() as group:
            group.start_soon(alice_session)
            group.start_soon(bob_session)

    anyio.run(both)
    assert b"Miso" in notes(workspace_root, alice) and b"Miso" not in notes(workspace_root, bob)
    # Ending the session finished bob's run; alice's stays as it was ended.
    assert AgentRun.objects.get(user=bob).status == RunStatus.COMPLETED
    assert AgentRun.objects.get(user=alice).status == RunStatus.CANCELLED
    check_refused(refused_sessions)
