"""mem0's JavaScript client (``mem0ai`` on npm: the current 3.x, and the 2.x line installed as
``mem0ai-v2``; both pinned in tests/clients/js/package-lock.json and installed there by
scripts/test.sh), unchanged, against a live server: every memory call as its users write them
(tests/clients/js/drive.js, drive_v2.js), a host ending in ``/`` under ``/api/mem0/`` included,
and bob's key reaching nothing of alice's. 3.x's answers come back with camelCase keys; 2.x
reads the older paths' lists."""

import shutil
import uuid
from pathlib import Path

import pytest

from tests.processes import json_of_run

FOLDER = Path(__file__).with_name("js")


def _drive(integrations, script: str, package: str, prefix: str) -> tuple[dict, str]:
    """One run of a driver: (what it saw, its tag)."""
    node = shutil.which("node")
    assert node, "Node.js is missing: scripts/test.sh installs it"
    assert (FOLDER / "node_modules" / package).is_dir(), "run scripts/test.sh (npm ci in tests/clients/js)"
    tag = f"{prefix}{uuid.uuid4().hex[:8]}"
    keys = integrations.keys
    command = [node, script, integrations.base, keys["alice"], keys["bob"], keys["svc"], tag]
    return json_of_run(command, cwd=FOLDER), tag


@pytest.fixture(scope="module")
def driven(integrations) -> tuple[dict, str]:
    return _drive(integrations, "drive.js", "mem0ai", "js")


@pytest.fixture(scope="module")
def driven_v2(integrations) -> tuple[dict, str]:
    return _drive(integrations, "drive_v2.js", "mem0ai-v2", "js2")


def test_mem0s_javascript_client_works_unchanged(driven):
    seen, tag = driven
    assert seen["ping"] == {"ok": "ok"} and seen["slashedPing"] == {"ok": "ok"}
    assert seen["forgedPing"]["raised"] == "AuthenticationError"
    texts = {
        f"I drink oolong tea every morning {tag}",
        f"My sister lives in Lisbon {tag}",
        f"I cycle to work {tag}",
    }
    events = [seen[name]["results"][0] for name in ("added", "second", "third")]
    assert [e["event"] for e in events] == ["ADD"] * 3 and {e["memory"] for e in events} == texts
    first = events[0]
    assert seen["get"]["memory"] == first["memory"] and seen["get"]["userId"] == "alice"
    assert seen["get"]["metadata"] == {"topic": "drinks"}
    assert {m["memory"] for m in seen["getAll"]["results"]} == texts
    assert seen["firstPage"]["count"] == 3 and len(seen["firstPage"]["results"]) == 2 and seen["firstPage"]["next"]
    assert seen["search"]["results"][0]["id"] == first["id"]
    assert [m["id"] for m in seen["metadataSearch"]["results"]] == [first["id"]]
    assert seen["update"]["memory"] == f"I drink green tea every morning {tag}"
    assert seen["update"]["previousId"] == first["id"]
    assert [(h["event"], h["newMemory"]) for h in seen["history"]] == [
        ("ADD", first["memory"]),
        ("UPDATE", seen["update"]["memory"]),
    ]
    assert ("agent", tag) in {(e["type"], e["name"]) for e in seen["users"]["results"]}
    assert len(seen["usersPage"]["results"]) == 1 and seen["usersPage"]["count"] == seen["users"]["count"]
    assert seen["batchUpdate"]["results"][0]["memory"] == f"Updated in a batch {tag}"
    assert seen["unsupported"]["raised"] == "ValidationError"
    assert seen["run"]["message"] == "Entity deleted successfully."
    assert not [m for m in seen["afterRun"]["results"] if "cycle" in m["memory"]] and seen["afterRun"]["count"] == 2
    assert len(seen["batchDelete"]["deleted"]) == 3  # the batch-updated memory and the versions it replaced
    assert seen["delete"]["deleted"] == [seen["second"]["results"][0]["id"]]
    assert seen["deleteAll"]["deleted"] == 1
    assert seen["after"]["results"] == []


def test_bobs_key_reaches_nothing_of_alices_through_the_javascript_client(driven):
    seen, _ = driven
    # each a 404 (alice unknown to bob's key, her ids not found): the client's MemoryNotFoundError
    for refused in ("bobNamesAlice", "bobSearchesAlice", "bobAddsForAlice", "bobReads", "bobDeletes", "bobDeletesAll"):
        assert seen[refused].get("raised") == "MemoryNotFoundError", (refused, seen[refused])
    # bob deleting alice's agent tag deletes only what bob holds under it: nothing
    held = [{(m["id"], m["memory"]) for m in seen[name]["results"]} for name in ("beforeBob", "afterBob")]
    assert held[0] == held[1] and len(held[0]) == 3
    assert "I am alice now" not in seen["aliceTexts"]


def test_mem0s_javascript_client_of_the_2x_line_works_unchanged(driven_v2):
    """2.x sends snake_case options to the older paths and types their answers as lists: a bare
    list unless ``output_format="v1.1"`` is asked, a page when paging is."""
    seen, tag = driven_v2
    assert seen["ping"] == {"ok": "ok"} and seen["forgedPing"]["raised"] == "AuthenticationError"
    texts = {f"I keep bees in the garden {tag}", f"I play the oboe {tag}", f"I swim on Tuesdays {tag}"}
    events = [seen["added"][0], seen["wrapped"]["results"][0], seen["third"][0]]
    assert [e["event"] for e in events] == ["ADD"] * 3 and {e["memory"] for e in events} == texts
    first = events[0]
    assert seen["get"]["memory"] == first["memory"] and seen["get"]["user_id"] == "alice"
    assert seen["get"]["metadata"] == {"topic": "garden"}
    for listed in ("getAll", "getAllV2"):
        assert {m["memory"] for m in seen[listed]} == texts, listed
    for paged in ("firstPage", "firstPageV2"):
        assert seen[paged]["count"] == 3 and len(seen[paged]["results"]) == 2 and seen[paged]["next"], paged
    assert seen["search"][0]["id"] == first["id"]
    assert [m["id"] for m in seen["searchV2"]] == [first["id"]]
    assert seen["update"]["memory"] == f"I keep two hives in the garden {tag}"
    assert seen["update"]["previous_id"] == first["id"]
    assert [(h["event"], h["new_memory"]) for h in seen["history"]] == [
        ("ADD", first["memory"]),
        ("UPDATE", seen["update"]["memory"]),
    ]
    assert all(h["categories"] == [] for h in seen["history"])
    assert ("agent", tag) in {(e["type"], e["name"]) for e in seen["users"]["results"]}
    assert seen["batchUpdate"]["results"][0]["memory"] == f"Updated in a batch {tag}"
    # an unset variable is left out by the client: a delete naming nobody is refused
    assert seen["deleteNobody"]["raised"] == "ValidationError"
    assert seen["deprecated"]["raised"] == "ValidationError"  # /v1/entities/{type}/{id}/: unsupported
    assert seen["run"]["message"] == "Entity deleted successfully."
    assert not [m for m in seen["afterRun"] if "swim" in m["memory"]] and len(seen["afterRun"]) == 2
    assert len(seen["batchDelete"]["deleted"]) == 3  # the batch-updated memory and the versions it replaced
    assert seen["delete"]["deleted"] == [seen["wrapped"]["results"][0]["id"]]
    assert seen["deleteAll"]["deleted"] == 1
    assert seen["after"] == []


def test_bobs_key_reaches_nothing_of_alices_through_the_2x_javascript_client(driven_v2):
    seen, _ = driven_v2
    refused = ("bobNamesAlice", "bobSearchesAlice", "bobSearchesAliceV2", "bobAddsForAlice", "bobReads")
    for name in (*refused, "bobUpdates", "bobDeletes", "bobDeletesAll"):
        assert seen[name].get("raised") == "MemoryNotFoundError", (name, seen[name])
    held = [{(m["id"], m["memory"]) for m in seen[name]} for name in ("beforeBob", "afterBob")]
    assert held[0] == held[1] and len(held[0]) == 3
    assert "I am alice now" not in seen["aliceTexts"] and "bob was here" not in seen["aliceTexts"]
