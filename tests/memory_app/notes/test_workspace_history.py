"""The change history of the notes file: who changed what and when, and undo through the same
lock and publish path, which never loses a later change."""

import hashlib
import random
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest
from django.db import connections
from django.urls import reverse

from config.errors import Conflict
from memory_app.notes import history, services
from memory_app.notes.history import Author, line_hunks, split_lines, text_hunks
from memory_app.notes.models import WorkspaceChange
from memory_app.runs import tools
from tests.memory_app.runs.helpers import memory_path

pytestmark = pytest.mark.django_db

HISTORY = "/api/users/me/workspace-history"
FILE = "/api/users/me/workspace/MEMORY.md"


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _undo(client, change_id, **body):
    return client.post(f"{HISTORY}/{change_id}/undo", body, format="json")


def _rows():
    return list(WorkspaceChange.objects.order_by("user_id", "name", "seq").values())


# --- recording --------------------------------------------------------------------------------


def test_every_writer_is_recorded_with_who_when_and_the_lines(api, alice, make_run, workspace_root, client):
    user_api = api(alice)
    assert user_api.put(FILE, {"content": "- tea\n"}, format="json").status_code == 200
    handle = make_run(alice)
    assert tools.remember_memory(credential=handle.credential, content="Likes window seats")["result"] == "appended"
    assert tools.remember_memory(credential=handle.credential, content="- green tea", replaces="- tea")["result"] == (
        "replaced"
    )
    client.force_login(alice)
    text = memory_path(workspace_root, alice).read_text()
    client.post(reverse("web:workspace"), {"name": "MEMORY.md", "content": text + "- edited on the page\n"})

    listed = user_api.get(HISTORY).json()
    assert listed["count"] == 4
    newest, replace, append, first = listed["results"]
    assert (first["seq"], first["action"], first["source"], first["actor"]) == (1, "write", "api", "alice")
    assert first["client"].startswith("API token ") and not first["before_exists"] and first["after_exists"]
    assert first["diff"] == [{"op": "@", "line": 1, "text": ""}, {"op": "+", "line": 1, "text": "- tea"}]
    assert (append["action"], append["source"], append["actor"], append["run_id"]) == (
        "append",
        "agent",
        None,
        handle.id,
    )
    assert [d["text"] for d in append["diff"] if d["op"] == "+"] == ["Likes window seats"]
    assert (replace["action"], replace["lines_added"], replace["lines_removed"]) == ("replace", 1, 1)
    assert [(d["op"], d["text"]) for d in replace["diff"] if d["op"] != "@"] == [("-", "- tea"), ("+", "- green tea")]
    assert (newest["source"], newest["actor"], newest["lines_added"]) == ("web", "alice", 1)
    # The chain: every change starts from the previous one's result, and ends at the file.
    chain = list(WorkspaceChange.objects.filter(user=alice).order_by("seq"))
    assert [c.before_sha256 for c in chain[1:]] == [c.after_sha256 for c in chain[:-1]]
    assert chain[-1].after_sha256 == _sha(memory_path(workspace_root, alice).read_bytes())


def test_no_change_no_record_and_refused_writes_record_nothing(api, alice, make_run, workspace_root):
    services.workspace_file_write(user=alice, name="MEMORY.md", content="- tea\n")
    services.workspace_file_write(user=alice, name="MEMORY.md", content="- tea\n")  # the same bytes
    handle = make_run(alice)
    assert tools.remember_memory(credential=handle.credential, content="tea")["result"] == "unchanged"
    sub = make_run(alice, kind="subagent", request_id="req-sub")
    with pytest.raises(tools.NotTopLevelRun):
        tools.remember_memory(credential=sub.credential, content="from a sub-agent")
    with pytest.raises(Conflict):
        tools.remember_memory(credential=handle.credential, content="x", replaces="not there")
    response = api(alice).put(FILE, {"content": "- coffee\n", "base_sha256": _sha(b"stale")}, format="json")
    assert response.status_code == 409
    assert WorkspaceChange.objects.filter(user=alice).count() == 1


def test_deleting_a_file_is_recorded_and_deleting_nothing_is_not(api, alice, workspace_root):
    client = api(alice)
    assert client.delete(FILE).status_code == 204
    assert not WorkspaceChange.objects.exists()
    client.put(FILE, {"content": "- a\n- b\n"}, format="json")
    assert client.delete(FILE).status_code == 204
    deleted = WorkspaceChange.objects.get(action="delete")
    assert (deleted.before_exists, deleted.after_exists, deleted.lines_removed) == (True, False, 2)


# --- undo -------------------------------------------------------------------------------------


def test_undo_an_agent_note_keeps_the_later_user_edit(api, alice, make_run, workspace_root):
    client = api(alice)
    client.put(FILE, {"content": "# Notes\n- tea\n"}, format="json")
    handle = make_run(alice)
    tools.remember_memory(credential=handle.credential, content="Thinks the moon is cheese")
    agent_change = WorkspaceChange.objects.get(action="append")
    current = client.get(FILE).json()
    client.put(FILE, {"content": current["content"] + "- later user note\n", "base_sha256": current["sha256"]})
    client.put(  # and one above the agent's line
        FILE,
        {"content": "# My notes\n- tea\nThinks the moon is cheese\n- later user note\n"},
        format="json",
    )
    opened = client.get(FILE).json()

    response = _undo(client, agent_change.pk, base_sha256=opened["sha256"])

    assert response.status_code == 200, response.json()
    expected = b"# My notes\n- tea\n- later user note\n"
    assert memory_path(workspace_root, alice).read_bytes() == expected
    body = response.json()
    assert body["file"]["sha256"] == _sha(expected) and response["ETag"] == f'"{_sha(expected)}"'
    assert (body["change"]["action"], body["change"]["reverts"], body["change"]["source"]) == (
        "undo",
        agent_change.pk,
        "api",
    )
    assert [(d["op"], d["text"]) for d in body["change"]["diff"] if d["op"] != "@"] == [
        ("-", "Thinks the moon is cheese")
    ]


def test_undo_of_lines_a_later_change_touched_is_a_conflict_and_changes_nothing(api, alice, make_run, workspace_root):
    client = api(alice)
    client.put(FILE, {"content": "- tea\n"}, format="json")
    handle = make_run(alice)
    tools.remember_memory(credential=handle.credential, content="Flight on Monday")
    agent_change = WorkspaceChange.objects.get(action="append")
    tools.remember_memory(credential=handle.credential, content="Flight on Tuesday", replaces="Flight on Monday")
    later = WorkspaceChange.objects.get(action="replace")
    before_file, before_rows = memory_path(workspace_root, alice).read_bytes(), _rows()

    response = _undo(client, agent_change.pk)

    assert response.status_code == 409
    error = response.json()["error"]
    assert error["code"] == "undo_conflict"
    assert f"#{later.seq}" in error["message"] and "Nothing was changed" in error["message"]
    assert error["details"] == {"change_id": later.pk, "reason": "touched_later"}
    assert memory_path(workspace_root, alice).read_bytes() == before_file
    assert _rows() == before_rows


def test_undo_with_a_stale_base_is_a_conflict_and_changes_nothing(api, alice, make_run, workspace_root):
    client = api(alice)
    client.put(FILE, {"content": "- tea\n"}, format="json")
    first = WorkspaceChange.objects.get()
    opened = client.get(FILE).json()
    tools.remember_memory(credential=make_run(alice).credential, content="saved meanwhile")
    before_file, before_rows = memory_path(workspace_root, alice).read_bytes(), _rows()

    response = _undo(client, first.pk, base_sha256=opened["sha256"])
    assert response.status_code == 409 and response.json()["error"]["code"] == "conflict"
    response = client.post(f"{HISTORY}/{first.pk}/undo", {}, format="json", HTTP_IF_MATCH=f'"{opened["sha256"]}"')
    assert response.status_code == 409 and response.json()["error"]["code"] == "conflict"
    assert memory_path(workspace_root, alice).read_bytes() == before_file
    assert _rows() == before_rows


def test_undo_twice_is_refused_and_undoing_the_undo_redoes(api, alice, make_run, workspace_root):
    client = api(alice)
    client.put(FILE, {"content": "- tea\n"}, format="json")
    tools.remember_memory(credential=make_run(alice).credential, content="remember me")
    note = WorkspaceChange.objects.get(action="append")
    undo = _undo(client, note.pk).json()["change"]
    assert memory_path(workspace_root, alice).read_bytes() == b"- tea\n"

    again = _undo(client, note.pk)
    assert again.status_code == 409
    assert again.json()["error"]["details"]["reason"] == "already_undone"

    assert _undo(client, undo["id"]).status_code == 200
    assert memory_path(workspace_root, alice).read_bytes() == b"- tea\nremember me\n"


def test_only_the_last_changes_of_a_file_are_kept_and_a_kept_undo_loses_its_dropped_link(
    api, alice, bob, make_run, workspace_root, monkeypatch
):
    monkeypatch.setattr(history, "HISTORY_KEEP", 3)
    client = api(alice)
    client.put(FILE, {"content": "- tea\n"}, format="json")  # seq 1
    credential = make_run(alice).credential
    tools.remember_memory(credential=credential, content="first note")  # seq 2
    note = WorkspaceChange.objects.get(user=alice, seq=2)
    undo = _undo(client, note.pk).json()["change"]  # seq 3, reverts seq 2
    api(alice).put("/api/users/me/workspace/USER.md", {"content": "Name: A\n"}, format="json")
    api(bob).put(FILE, {"content": "- coffee\n"}, format="json")
    for text in ("second note", "third note"):  # seq 4 and 5: seq 1 and 2 are dropped
        tools.remember_memory(credential=credential, content=text)

    kept = list(WorkspaceChange.objects.filter(user=alice, name="MEMORY.md").order_by("seq"))
    assert [change.seq for change in kept] == [3, 4, 5]
    assert kept[0].pk == undo["id"] and kept[0].reverts_id is None  # what it reversed is gone
    assert WorkspaceChange.objects.filter(user=alice, name="USER.md").count() == 1
    assert WorkspaceChange.objects.filter(user=bob).count() == 1
    assert memory_path(workspace_root, alice).read_bytes() == b"- tea\nsecond note\nthird note\n"
    assert client.get(HISTORY, {"name": "MEMORY.md"}).json()["count"] == 3


def test_undo_of_a_creation_removes_the_file_and_of_a_deletion_restores_it(api, alice, workspace_root):
    client = api(alice)
    client.put(FILE, {"content": "- only line\n"}, format="json")
    created = WorkspaceChange.objects.get()
    assert _undo(client, created.pk).status_code == 200
    assert not memory_path(workspace_root, alice).exists()
    assert client.get(FILE).json()["exists"] is False

    client.put(FILE, {"content": "- a\n- b"}, format="json")  # no final newline
    client.delete(FILE)
    deleted = WorkspaceChange.objects.get(action="delete")
    assert _undo(client, deleted.pk).status_code == 200
    assert memory_path(workspace_root, alice).read_bytes() == b"- a\n- b"


def test_a_file_changed_outside_the_service_is_never_guessed_at(api, alice, make_run, workspace_root):
    client = api(alice)
    client.put(FILE, {"content": "- tea\n"}, format="json")
    tools.remember_memory(credential=make_run(alice).credential, content="note")
    note = WorkspaceChange.objects.get(action="append")
    memory_path(workspace_root, alice).write_bytes(b"- tea\nnote\n- typed in a shell\n")
    rows = _rows()
    response = _undo(client, note.pk)
    assert response.status_code == 409
    assert response.json()["error"]["details"] == {"reason": "changed_outside"}
    assert memory_path(workspace_root, alice).read_bytes() == b"- tea\nnote\n- typed in a shell\n"
    assert _rows() == rows


def test_a_restored_last_line_without_newline_gets_one_before_later_lines(api, alice, make_run, workspace_root):
    client = api(alice)
    client.put(FILE, {"content": "- tea"}, format="json")
    handle = make_run(alice)
    tools.remember_memory(credential=handle.credential, content="first note")  # adds the missing newline
    first = WorkspaceChange.objects.get(action="append")
    tools.remember_memory(credential=handle.credential, content="second note")
    assert _undo(client, first.pk).status_code == 200
    assert memory_path(workspace_root, alice).read_bytes() == b"- tea\nsecond note\n"


# --- who may see and undo ---------------------------------------------------------------------


def test_another_user_cannot_see_or_undo_my_notes_history(api, alice, bob, svc, make_run, workspace_root):
    api(alice).put(FILE, {"content": "- alice secret plan\n"}, format="json")
    change = WorkspaceChange.objects.get()
    api(bob).put(FILE, {"content": "- bob's own\n"}, format="json")
    before_rows = _rows()
    for other in (bob, svc):
        client = api(other)
        listed = client.get(HISTORY).json()
        assert all(row["id"] != change.pk for row in listed["results"])
        assert "alice secret plan" not in str(listed)
        assert client.get(f"{HISTORY}/{change.pk}").status_code == 404
        response = _undo(client, change.pk)
        assert response.status_code == 404 and "alice secret plan" not in response.content.decode()
        assert client.delete(HISTORY, {"name": "MEMORY.md"}, format="json").status_code == 200
    assert memory_path(workspace_root, alice).read_bytes() == b"- alice secret plan\n"
    assert WorkspaceChange.objects.filter(pk=change.pk).exists()
    assert [r for r in _rows() if r["user_id"] == alice.pk] == [r for r in before_rows if r["user_id"] == alice.pk]
    # A run token is not a user credential here.
    handle = make_run(alice)
    client = api()
    client.credentials(HTTP_AUTHORIZATION=f"Run {handle.token}")
    assert client.get(HISTORY).status_code == 401
    assert client.post(f"{HISTORY}/{change.pk}/undo", {}, format="json").status_code == 401


def test_forgetting_the_history_keeps_the_files_and_other_users_history(api, alice, bob, workspace_root):
    api(alice).put(FILE, {"content": "- a\n"}, format="json")
    api(alice).put("/api/users/me/workspace/USER.md", {"content": "Name: Alice\n"}, format="json")
    api(bob).put(FILE, {"content": "- b\n"}, format="json")
    response = api(alice).delete(HISTORY, {"name": "MEMORY.md"}, format="json")
    assert response.json() == {"forgotten": 1}
    assert list(WorkspaceChange.objects.filter(user=alice).values_list("name", flat=True)) == ["USER.md"]
    assert api(alice).delete(HISTORY, format="json").json() == {"forgotten": 1}
    assert WorkspaceChange.objects.filter(user=bob).count() == 1
    assert memory_path(workspace_root, alice).read_bytes() == b"- a\n"
    assert api(alice).delete(HISTORY, {"name": "../x"}, format="json").status_code == 404


def test_history_filters_and_bad_input(api, alice, workspace_root):
    client = api(alice)
    client.put(FILE, {"content": "- a\n"}, format="json")
    client.put("/api/users/me/workspace/AGENTS.md", {"content": "Be brief.\n"}, format="json")
    assert [r["name"] for r in client.get(HISTORY, {"name": "AGENTS.md"}).json()["results"]] == ["AGENTS.md"]
    assert client.get(HISTORY, {"name": "secrets.txt"}).status_code == 400
    assert client.get(HISTORY, {"source": "api"}).json()["count"] == 2
    assert client.get(f"{HISTORY}/wch_nothing").status_code == 404
    change = WorkspaceChange.objects.filter(name="MEMORY.md").get()
    response = _undo(client, change.pk, base_sha256="not-a-hash")
    assert response.status_code == 400 and response.json()["error"]["code"] == "invalid_base_sha256"
    assert _undo(client, change.pk, unknown=1).status_code == 400
    assert memory_path(workspace_root, alice).read_bytes() == b"- a\n"


def test_listing_bounds_the_diff_and_the_detail_shows_more(api, alice, workspace_root):
    client = api(alice)
    client.put(FILE, {"content": "".join(f"- line {i}\n" for i in range(300))}, format="json")
    row = client.get(HISTORY).json()["results"][0]
    assert row["diff_truncated"] is True and len(row["diff"]) == history.VIEW_MAX_LINES
    detail = client.get(f"{HISTORY}/{row['id']}").json()
    assert detail["diff_truncated"] is False and len(detail["diff"]) == 301
    client.delete(FILE)
    client.put(FILE, {"content": "x" * 5000 + "\n"}, format="json")
    long_line = client.get(HISTORY).json()["results"][0]["diff"][-1]
    assert long_line["text"].endswith("…[truncated]") and len(long_line["text"].encode()) <= 1024


# --- the web page -----------------------------------------------------------------------------


def test_history_page_lists_changes_and_undoes_through_the_page(client, alice, make_run, workspace_root):
    services.workspace_file_write(user=alice, name="MEMORY.md", content="- tea\n")
    handle = make_run(alice)
    tools.remember_memory(credential=handle.credential, content="Allergic to <peanuts>")
    note = WorkspaceChange.objects.get(action="append")
    client.force_login(alice)
    page = client.get(reverse("web:workspace_history"))
    html = page.content.decode()
    assert page.status_code == 200
    assert "Allergic to &lt;peanuts&gt;" in html and handle.id in html
    assert reverse("web:run_detail", args=[handle.id]) in html
    base = _sha(memory_path(workspace_root, alice).read_bytes())

    stale = client.post(reverse("web:workspace_change_undo", args=[note.pk]), {"base_sha256": _sha(b"old")})
    assert stale.status_code == 409 and "nothing was undone" in stale.content.decode()
    assert b"peanuts" in memory_path(workspace_root, alice).read_bytes()

    done = client.post(reverse("web:workspace_change_undo", args=[note.pk]), {"base_sha256": base}, follow=True)
    assert done.redirect_chain[-1][0].startswith(reverse("web:workspace_history"))
    assert memory_path(workspace_root, alice).read_bytes() == b"- tea\n"
    undo = WorkspaceChange.objects.get(action="undo")
    assert (undo.source, undo.actor, undo.reverts_id) == ("web", alice, note.pk)

    again = client.post(reverse("web:workspace_change_undo", args=[note.pk]), {"base_sha256": _sha(b"- tea\n")})
    assert again.status_code == 409 and "already undone" in again.content.decode()


def test_history_page_shows_only_my_changes(client, alice, bob, workspace_root):
    services.workspace_file_write(user=alice, name="MEMORY.md", content="- alice only\n")
    change = WorkspaceChange.objects.get()
    client.force_login(bob)
    page = client.get(reverse("web:workspace_history")).content.decode()
    assert "alice only" not in page and "No changes are recorded yet" in page
    response = client.post(reverse("web:workspace_change_undo", args=[change.pk]), {"base_sha256": ""})
    assert response.status_code == 404
    assert memory_path(workspace_root, alice).read_bytes() == b"- alice only\n"


def test_editor_saves_are_recorded_as_web_changes(client, alice, workspace_root):
    client.force_login(alice)
    client.post(reverse("web:workspace"), {"name": "USER.md", "content": "Name: Alice\r\n"})
    change = WorkspaceChange.objects.get()
    assert (change.name, change.source, change.actor, change.action) == ("USER.md", "web", alice, "write")
    client.post(reverse("web:workspace"), {"name": "USER.md", "action": "delete", "base_sha256": change.after_sha256})
    assert WorkspaceChange.objects.filter(action="delete", source="web").count() == 1


# --- the diff and the reversal, directly --------------------------------------------------------


def _apply(before: list[str], hunks: list[dict]) -> list[str]:
    out, at = [], 0
    for hunk in hunks:
        out += before[at : hunk["old_start"]]
        assert before[hunk["old_start"] : hunk["old_start"] + len(hunk["old"])] == hunk["old"]
        out += hunk["new"]
        at = hunk["old_start"] + len(hunk["old"])
    return out + before[at:]


def test_hunks_reproduce_the_new_version_for_random_edits():
    rng = random.Random(7)
    words = ["tea", "coffee", "", "- note", "# head", "佛跳墙", "x"]
    for _ in range(300):
        before = "".join(rng.choice(words) + rng.choice(["\n", "\n", ""]) for _ in range(rng.randint(0, 12)))
        after = "".join(rng.choice(words) + rng.choice(["\n", "\n", ""]) for _ in range(rng.randint(0, 12)))
        old, new = split_lines(before), split_lines(after)
        hunks = line_hunks(old, new)
        assert _apply(old, hunks) == new
        assert "".join(_apply(old, hunks)) == after


def test_text_hunks_are_the_line_hunks_of_the_split_texts():
    rng = random.Random(11)
    words = ["tea", "coffee", "", "- note", "佛跳墙", "\r"]
    cases = []
    for _ in range(400):
        before = "".join(rng.choice(words) + rng.choice(["\n", "\n", ""]) for _ in range(rng.randint(0, 10)))
        added = "".join(rng.choice(words) + rng.choice(["\n", "\n", ""]) for _ in range(rng.randint(0, 4)))
        cases.append((before, before + added))  # appends, at a line end or in the middle of one
        cases.append((before, "".join(rng.choice(words) + "\n" for _ in range(rng.randint(0, 10)))))
    cases += [("", ""), ("", "a\n"), ("a\n", "a\n"), ("a\n", "a\nb"), ("a", "ab\n"), ("a\n", "a\n\n")]
    for before, after in cases:
        assert text_hunks(before, after) == line_hunks(split_lines(before), split_lines(after)), (before, after)


def test_big_rewrites_fall_back_to_one_replacement():
    old = [f"{i}\n" for i in range(5000)]
    new = [f"{i}!\n" for i in range(5000)]
    hunks = line_hunks(old, new)
    assert len(hunks) == 1 and _apply(old, hunks) == new


def test_random_undos_either_restore_exactly_or_refuse(alice, workspace_root):
    """Undo of any change, after any later edits: the result is the file with that change
    reversed and the others kept, or a conflict that changed nothing."""
    rng = random.Random(11)
    author = Author("api", actor=alice)
    lines = [f"- fact {i}\n" for i in range(8)]
    services.workspace_file_write(user=alice, name="MEMORY.md", content="".join(lines), author=author)
    for _ in range(25):
        edited = list(lines)
        position = rng.randrange(len(edited) + 1)
        if rng.random() < 0.5 or not edited:
            edited.insert(position, f"- new {rng.randrange(10**6)}\n")
        else:
            del edited[min(position, len(edited) - 1)]
        services.workspace_file_write(user=alice, name="MEMORY.md", content="".join(edited), author=author)
        lines = edited
        target = rng.choice(list(WorkspaceChange.objects.filter(user=alice, seq__gt=1)))
        before_bytes = memory_path(workspace_root, alice).read_bytes()
        try:
            services.workspace_change_undo(user=alice, change_id=target.pk)
        except history.UndoConflict:
            assert memory_path(workspace_root, alice).read_bytes() == before_bytes
            continue
        now = memory_path(workspace_root, alice).read_text()
        # The target's added lines are gone (each was unique) and its removed lines are back.
        for hunk in target.hunks:
            for line in hunk["new"]:
                assert line not in now
            for line in hunk["old"]:
                assert line in now
        lines = split_lines(now)


# --- concurrency ----------------------------------------------------------------------------------


@pytest.mark.postgres_only
@pytest.mark.django_db(transaction=True)
def test_parallel_writers_and_undos_keep_one_unbroken_chain(make_run, alice, workspace_root):
    services.workspace_file_write(user=alice, name="MEMORY.md", content="# Notes\n")
    handle = make_run(alice, lease_seconds=600)
    credential = handle.credential
    for i in range(4):
        tools.remember_memory(credential=credential, content=f"early {i}")
    early = list(WorkspaceChange.objects.filter(action="append").values_list("pk", flat=True))
    count = 16
    barrier = threading.Barrier(count)

    def work(i):
        try:
            barrier.wait(timeout=30)
            if i < 4:
                try:
                    services.workspace_change_undo(user=alice, change_id=early[i])
                    return "undone"
                except history.UndoConflict:
                    return "conflict"
            return tools.remember_memory(credential=credential, content=f"parallel {i}")["result"]
        finally:
            connections.close_all()

    with ThreadPoolExecutor(max_workers=count) as pool:
        results = list(pool.map(work, range(count)))

    assert results.count("appended") == 12 and results.count("undone") == 4
    chain = list(WorkspaceChange.objects.filter(user=alice, name="MEMORY.md").order_by("seq"))
    assert [c.seq for c in chain] == list(range(1, len(chain) + 1))
    assert [c.before_sha256 for c in chain[1:]] == [c.after_sha256 for c in chain[:-1]]
    text = memory_path(workspace_root, alice).read_text()
    assert chain[-1].after_sha256 == _sha(text.encode())
    assert all(f"early {i}" not in text for i in range(4))
    assert all(f"parallel {i}" in text for i in range(4, count))
