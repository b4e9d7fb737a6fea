"""mem0's clients before 2.0, unchanged, against a live server: agents pinned to ``mem0ai`` 1.0
(add at ``/v1/memories/``, list and search at ``/v2/…``, entity ids as arguments) or 0.1 (list
and search at ``/v1/…`` by default, ``GET`` for the list) work without a line changed.

Each runs in a process of its own (tests/clients/mem0_older_driver.py), with the registry's
wheel of that version unpacked by ``scripts/ensure_env.sh`` (requirements-older-clients.txt)
before the installed ``mem0ai``."""

import os
import sys
import uuid
from pathlib import Path

import pytest

from tests.processes import json_of_run

ROOT = Path(__file__).resolve().parents[2]
DRIVER = Path(__file__).with_name("mem0_older_driver.py")
UNPACKED = ROOT / ".venv" / "older-clients"
VERSIONS = [
    line.split("==")[1].strip()
    for line in (ROOT / "requirements-older-clients.txt").read_text().splitlines()
    if line.startswith("mem0ai==")
]


def drive(integrations, version: str) -> dict:
    folder = UNPACKED / f"mem0ai-{version}"
    assert (folder / "mem0" / "client" / "main.py").is_file(), (
        f"{folder} is missing: scripts/ensure_env.sh requirements-dev.txt unpacks it"
    )
    tag = f"old{uuid.uuid4().hex[:8]}"
    keys = integrations.keys
    seen = json_of_run(
        [sys.executable, str(DRIVER), integrations.base, keys["svc"], keys["bob"], "bob", tag],
        env={**os.environ, "PYTHONPATH": str(folder)},
    )
    seen["tag"] = tag
    return seen


def results(answer) -> list:
    return answer["results"] if isinstance(answer, dict) else answer


def test_there_are_older_versions_to_drive():
    assert VERSIONS and all(not version.startswith("2.") for version in VERSIONS)


@pytest.mark.parametrize("version", VERSIONS)
def test_an_older_client_works_unchanged(integrations, version):
    seen = drive(integrations, version)
    tag = seen["tag"]
    assert seen["version"] == version
    assert seen["org_id"] and seen["project_id"]  # from /v1/ping/, sent back with every call
    # Their lists come as mem0's "v1.0" bare list, as their types say (1.0 wraps it in "results").
    shape = list if version.startswith("0.") else dict
    assert all(isinstance(seen[name], shape) for name in ("get_all", "search", "search_v2_filters", "async_search"))
    (event,) = seen["added"]["results"]  # add asks for "v1.1"
    assert event["event"] == "ADD" and tag in event["memory"]
    assert seen["get"]["memory"] == event["memory"] and seen["get"]["user_id"] == "bob"
    for listing in ("get_all", "get_all_v2_filters"):
        texts = sorted(m["memory"] for m in results(seen[listing]))
        assert texts == sorted([event["memory"], f"My sister lives in Lisbon {tag}"]), listing
    for searched in ("search", "search_v2_filters", "async_search"):
        found = results(seen[searched])
        assert found and found[0]["id"] == event["id"], searched
        assert all(tag in m["memory"] for m in found), searched  # nothing of another agent's
    assert seen["update"]["memory"] == f"I drink green tea every morning {tag}"
    assert [step["event"] for step in seen["history"]] == ["ADD", "UPDATE"]
    own = sorted(m["memory"] for m in results(seen["own_get_all"]))  # bob's own key, after the update
    assert own == sorted([seen["update"]["memory"], f"My sister lives in Lisbon {tag}"])
    assert ("agent", tag) in {(e["type"], e["name"]) for e in seen["users"]["results"]}
    # bob's own key reaches no one else: named, alice is unknown to it, and nothing is written
    # alice is unknown to bob's key: a 404, the client's own "not found" error
    for refused in ("own_names_another", "own_adds_for_another"):
        assert seen[refused]["raised"] == "MemoryNotFoundError", seen[refused]
    assert "I am alice now" not in {m["memory"] for m in results(seen["alice_after"])}
    assert seen["batch_update"]["results"][0]["memory"] == f"Updated in a batch {tag}"
    assert seen["batch_delete"]["deleted"]
    assert results(seen["other_after"]) == []  # delete_users took that agent's memory
    assert event["id"] in seen["delete"]["deleted"]
    assert seen["delete_all"]["deleted"] == 1
    assert results(seen["after"]) == []
