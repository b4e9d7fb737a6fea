"""Benchmark of the notes files' change history on PostgreSQL.

    DATABASE_URL=postgresql://postgres@127.0.0.1:5432/postgres .venv/bin/python bench/bench_notes_history.py

Creates a throwaway database (dropped at the end) and a throwaway workspace root, then measures
through the real services (per-user lock, recorded diff, fsync'd publish):

  * remember_memory appends to a growing MEMORY.md (up to --appends notes), history recorded
  * an editor save of the whole file (one line changed in the middle)
  * the line diff alone for files of 100 to 3,000 lines (one edit, and a rewrite of every line)
  * undo of the oldest change with 10, 100 and 499 later changes to follow it through
  * the history page and the API list (20 and 50 changes with their diffs)

and prints p50/p95 latency.
"""

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from search_common import percentile  # noqa: E402 (bench/ is on the path when run as a script)

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.settings")
os.environ["WORKSPACE_ROOT"] = tempfile.mkdtemp(prefix="memsvc-bench-ws-")
os.environ.setdefault("DATABASE_TEST_NAME", f"bench_memsvc_{os.getpid()}")


def report(label, latencies):
    ms = [v * 1000 for v in latencies]
    print(
        f"{label:<52} n={len(ms):<5} p50={percentile(ms, 50):8.2f} ms  p95={percentile(ms, 95):8.2f} ms  "
        f"mean={statistics.fmean(ms):8.2f} ms"
    )


def timed(fn, repeat):
    out = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        out.append(time.perf_counter() - start)
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--appends", type=int, default=500)
    args = parser.parse_args()
    if not os.environ.get("DATABASE_URL"):
        sys.exit("Set DATABASE_URL to a PostgreSQL server (the benchmark targets PostgreSQL).")

    import django

    django.setup()
    from django.db import connection, connections
    from django.test.utils import setup_test_environment

    setup_test_environment()
    old_name = connection.settings_dict["NAME"]
    connection.creation.create_test_db(verbosity=0, autoclobber=True, keepdb=False)
    try:
        run(args)
    finally:
        connections.close_all()
        connection.creation.destroy_test_db(old_name, verbosity=0)
        shutil.rmtree(os.environ["WORKSPACE_ROOT"], ignore_errors=True)


def run(args):
    from django.test import Client
    from django.urls import reverse

    from identity_app.services import token_issue, user_grant_service
    from memory_app.notes import history, selectors
    from memory_app.notes import services as notes_services
    from memory_app.notes.models import WorkspaceChange
    from memory_app.notes.workspace import Workspace
    from memory_app.runs import services as run_services
    from memory_app.runs import tools
    from memory_app.runs.leases import run_credential_from_token
    from memory_app.threads import services as thread_services
    from tests.factories import UserFactory

    svc = UserFactory(username="bench-svc")
    user_grant_service(user=svc)

    def new_run(user):
        conversation = thread_services.conversation_create(actor=svc, username=user.username, title="bench")
        return run_services.run_create(
            actor=svc,
            username=user.username,
            conversation_id=conversation.pk,
            request_id="bench",
            worker_id="w1",
            lease_seconds=3600,
        )

    # remember_memory with the history recorded, on a file that grows to --appends notes.
    alice = UserFactory(username="bench-alice")
    credential = run_credential_from_token(new_run(alice).run_token)
    counter = iter(range(10**9))
    appends = timed(
        lambda: tools.remember_memory(credential=credential, content=f"- fact number {next(counter)}: " + "x" * 60),
        args.appends,
    )
    size = Workspace(alice.pk).read_file("MEMORY.md", max_bytes=1 << 20).size
    report(f"remember_memory append (file grows to {size // 1024} KiB)", appends)

    # An editor save of the whole file, one line changed in the middle.
    def editor_save():
        text = selectors.workspace_file_get(user=alice, name="MEMORY.md").content
        lines = text.split("\n")
        lines[len(lines) // 2] += " (edited)"
        notes_services.workspace_file_write(user=alice, name="MEMORY.md", content="\n".join(lines))

    report("editor save, one line changed (whole file sent)", timed(editor_save, 50))

    # The diff alone.
    for count in (100, 1000, 3000):
        before = [f"- note {i}\n" for i in range(count)]
        one_edit = list(before)
        one_edit[count // 2] = "- changed\n"
        rewrite = [f"- rewritten {i}\n" for i in range(count)]
        report(
            f"line diff, {count} lines, one edit",
            timed(lambda b=before, a=one_edit: history.line_hunks(b, a), 50),
        )
        report(
            f"line diff, {count} lines, every line rewritten",
            timed(lambda b=before, a=rewrite: history.line_hunks(b, a), 10),
        )

    # Undo of the oldest change with N later changes to follow through.
    for later in (10, 100, 499):
        bob = UserFactory(username=f"bench-undo-{later}")
        bob_credential = run_credential_from_token(new_run(bob).run_token)
        tools.remember_memory(credential=bob_credential, content="- the note to undo")
        for i in range(later):
            tools.remember_memory(credential=bob_credential, content=f"- later note {i}")
        first = WorkspaceChange.objects.filter(user=bob).order_by("seq").first()
        start = time.perf_counter()
        notes_services.workspace_change_undo(user=bob, change_id=first.pk)
        report(f"undo of the oldest change, {later} later changes", [time.perf_counter() - start])

    # The page and the API list.
    client = Client()
    client.force_login(alice)
    url = reverse("web:workspace_history")
    report("history page (20 changes with diffs)", timed(lambda: client.get(url), 50))
    _, key = token_issue(user=alice)
    api = Client(HTTP_AUTHORIZATION=f"Token {key}")
    report("API list (50 changes with diffs)", timed(lambda: api.get("/api/users/me/workspace-history"), 50))


if __name__ == "__main__":
    main()
