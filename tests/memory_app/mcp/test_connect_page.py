"""The "Connect your agent" page: ready-to-paste configurations (MCP over HTTP and stdio, the
Python client, mem0's client, the LangGraph store) with this service's address, and a button
that makes an API key for the agent, shown once and filled into every snippet. The Python
client's snippet runs as pasted against a live server."""

import json
import re
import shlex
from html import unescape

import pytest
from django.urls import reverse

from identity_app.models import ApiToken
from identity_app.permissions import is_service_principal
from memory_app.mcp.web import KEY_PLACEHOLDER
from memory_app.memories.models import Memory

pytestmark = pytest.mark.django_db

SNIPPETS = (
    "snippet-mcp-http",
    "snippet-mcp-stdio",
    "snippet-python",
    "snippet-mem0",
    "snippet-langgraph-env",
    "snippet-langgraph",
)


def snippets(html: str) -> dict[str, str]:
    found = dict(re.findall(r'<pre id="(snippet-[\w-]+)"[^>]*><code>(.*?)</code></pre>', html, re.S))
    return {ident: unescape(text) for ident, text in found.items()}


def test_the_page_shows_every_snippet_with_this_services_address(client, alice, settings):
    settings.PUBLIC_BASE_URL = ""
    settings.MCP_PUBLIC_URL = ""
    settings.ALLOWED_HOSTS = ["memory.internal"]
    client.force_login(alice)
    response = client.get(reverse("web:connect"), HTTP_HOST="memory.internal:9000")
    assert response.status_code == 200
    found = snippets(response.content.decode())
    assert set(found) == set(SNIPPETS)
    http = json.loads(found["snippet-mcp-http"])["mcpServers"]["memory"]
    assert http == {
        "type": "http",
        "url": "http://memory.internal:9000/mcp",
        "headers": {"Authorization": f"Token {KEY_PLACEHOLDER}"},
    }
    stdio = json.loads(found["snippet-mcp-stdio"])["mcpServers"]["memory"]
    assert stdio["args"][-1] == "mcp_server" and stdio["env"]["MEMORY_API_TOKEN"] == KEY_PLACEHOLDER
    assert "SECRET_KEY" not in json.dumps(stdio) or "<the service's SECRET_KEY>" in json.dumps(stdio)
    for ident in ("snippet-python", "snippet-mem0", "snippet-langgraph"):
        compile(found[ident], ident, "exec")  # valid Python as pasted
    assert 'MemoryClient(api_key="<your API key>", host="http://memory.internal:9000")' in found["snippet-mem0"]
    assert 'user_id="alice"' in found["snippet-mem0"]
    env = dict(line.removeprefix("export ").split("=", 1) for line in found["snippet-langgraph-env"].splitlines())
    assert {k: shlex.split(v)[0] for k, v in env.items()} == {
        "MEMSVC_URL": "http://memory.internal:9000",
        "MEMSVC_TOKEN": KEY_PLACEHOLDER,
    }
    assert "MemoryStore.from_env()" in found["snippet-langgraph"]
    assert not ApiToken.objects.exists()  # opening the page makes no key


def test_the_settings_win_over_the_pages_own_address(client, alice, settings):
    settings.PUBLIC_BASE_URL = "https://memory.example.com"
    settings.MCP_PUBLIC_URL = "https://mcp.example.com/mcp"
    client.force_login(alice)
    html = client.get(reverse("web:connect")).content.decode()
    found = snippets(html)
    assert json.loads(found["snippet-mcp-http"])["mcpServers"]["memory"]["url"] == "https://mcp.example.com/mcp"
    assert 'host="https://memory.example.com"' in found["snippet-mem0"]
    assert "PUBLIC_BASE_URL" not in html  # the address is the setting: nothing to explain


def test_the_button_makes_a_key_shown_once_and_filled_into_every_snippet(client, alice, bob):
    client.force_login(alice)
    response = client.post(reverse("web:connect"))
    assert response.status_code == 200 and response["Cache-Control"] == "no-store"
    token = ApiToken.objects.get()
    assert token.user == alice and token.name.startswith("agent connection ")
    html = response.content.decode()
    key = re.search(r'value="([^"]+)" id="new-key-value"', html).group(1)
    assert key not in token.key_hash and token.prefix and key.startswith(token.prefix)
    found = snippets(html)
    for ident in set(SNIPPETS) - {"snippet-langgraph"}:  # the store reads the key from the environment
        assert key in found[ident] and KEY_PLACEHOLDER not in found[ident], ident
    assert json.loads(found["snippet-mcp-http"])["mcpServers"]["memory"]["headers"] == {"Authorization": f"Token {key}"}
    # Shown once: the next visit shows the placeholder again, never the key.
    assert key not in client.get(reverse("web:connect")).content.decode()
    # The key is alice's: bob's page knows nothing of it.
    client.force_login(bob)
    assert key not in client.get(reverse("web:connect")).content.decode()


def test_signed_out_the_page_and_the_button_lead_to_the_login(client):
    for method in (client.get, client.post):
        response = method(reverse("web:connect"))
        assert response.status_code == 302 and response["Location"].startswith(reverse("login"))
    assert not ApiToken.objects.exists()


def test_a_service_principal_is_told_to_name_the_user_it_acts_for(client, svc):
    assert is_service_principal(svc)
    client.force_login(svc)
    html = client.get(reverse("web:connect")).content.decode()
    headers = json.loads(snippets(html)["snippet-mcp-http"])["mcpServers"]["memory"]["headers"]
    assert headers["X-Memory-User"] == "<username it acts for>"


@pytest.mark.django_db(transaction=True)
def test_the_python_snippet_runs_as_pasted_against_the_service(client, live_server, settings, alice):
    settings.PUBLIC_BASE_URL = live_server.url
    settings.API_THROTTLE = False
    client.force_login(alice)
    python = snippets(client.post(reverse("web:connect")).content.decode())["snippet-python"]
    exec(compile(python, "snippet-python", "exec"), {})
    assert Memory.objects.filter(owner=alice, content="I prefer short answers.").exists()
