"""What recording "who read this?" costs the context path (docs/home.md, "Who read this?").

    .venv/bin/python bench/bench_reads.py [--calls 400] [--database-url postgresql://…]

On a throwaway database (PostgreSQL at DATABASE_URL, else SQLite), one user with a notes file,
ten memories of their own (auto-memory ``use`` on), a chat bound to them with ten items, and a
top-level run in that chat. Then ``run_context_build`` (what ``GET /api/runs/{id}/context`` does
after authentication) is called ``--calls`` times with recording on and as many with it off
(``recorder.record`` replaced by a no-op), interleaved, each call round 1 with a query: the
notes file, the identity block (10 ids) and the scoped section (up to 8 ids) are all recorded.
Printed: p50/p95/mean of both in milliseconds, the difference, the time spent inside
``record`` per call (what recording adds to the request, measured directly: the difference of
two ~20 ms timings is within the noise), and the time of the write that follows each response (``recorder.flush``: one INSERT of the call's rows, after the response).
"""

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.settings")
os.environ.setdefault("DATABASE_TEST_NAME", f"bench_reads_{os.getpid()}")
os.environ.setdefault("API_THROTTLE", "off")


def pct(values: list[float], p: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(len(values) * p))]


def line(name: str, values: list[float]) -> str:
    return (
        f"{name:<28} p50 {pct(values, 0.5):7.3f}  p95 {pct(values, 0.95):7.3f}  mean {statistics.mean(values):7.3f} ms"
    )


def run(args) -> None:
    from identity_app.services import user_grant_service
    from memory_app.automemory.services import auto_memory_settings_update
    from memory_app.context.assembly import run_context_build
    from memory_app.memories.models import Origin, Tier
    from memory_app.memories.services import memory_create
    from memory_app.notes import services as notes_services
    from memory_app.reads import recorder
    from memory_app.reads.models import MemoryRead
    from memory_app.runs import services as run_services
    from memory_app.runs.leases import run_credential_from_token
    from memory_app.scoped.services import scoped_item_create
    from memory_app.threads import services as thread_services
    from tests.factories import ChatBindingFactory, UserFactory

    chat = "milky:private:10001"
    user, svc = UserFactory(username="mei"), UserFactory(username="svc")
    user_grant_service(user=svc)
    ChatBindingFactory(chat_key=chat, user=user)
    auto_memory_settings_update(user=user, changes={"use": True})
    notes_services.workspace_file_write(
        user=user, name="MEMORY.md", content="".join(f"- note {n}: prefers tea number {n}\n" for n in range(40))
    )
    for n in range(10):
        memory_create(actor=user, tier=Tier.USER, kind="fact", content=f"Fact {n} about tea", origin=Origin.API)
        scoped_item_create(actor=svc, session_id=chat, kind="preference", content=f"Likes tea blend {n}")
    conversation = thread_services.conversation_create(actor=svc, username="mei", title="t", session_key=chat)
    issued = run_services.run_create(
        actor=svc,
        username="mei",
        conversation_id=conversation.pk,
        request_id="r1",
        kind="chat",
        worker_id="w1",
        lease_seconds=3600,
        prompt="hi",
    )
    credential = run_credential_from_token(issued.run_token)
    real_record = recorder.record

    spent = [0.0]

    def timed_record(**kwargs) -> None:
        started = time.perf_counter()
        real_record(**kwargs)
        spent[0] += time.perf_counter() - started

    def context() -> float:
        started = time.perf_counter()
        run_context_build(credential=credential, query="which tea", round_number=1)
        return (time.perf_counter() - started) * 1000

    for _ in range(30):  # warm caches (file cache, query vectors, plans)
        context()
        recorder.flush()
    on, off, flushes = [], [], []
    in_record = []
    for _ in range(args.calls):
        recorder.record = timed_record
        spent[0] = 0.0
        on.append(context())
        in_record.append(spent[0] * 1000)
        started = time.perf_counter()
        recorder.flush()  # what request_finished does once the response is out
        flushes.append((time.perf_counter() - started) * 1000)
        recorder.record = lambda **kwargs: None
        off.append(context())
    recorder.record = real_record
    print(f"rows per call: {MemoryRead.objects.count() // (args.calls + 30)}")
    print(line("context, recording off", off))
    print(line("context, recording on", on))
    print(
        f"{'overhead':<28} p50 {pct(on, 0.5) - pct(off, 0.5):7.3f}  p95 {pct(on, 0.95) - pct(off, 0.95):7.3f}  "
        f"mean {statistics.mean(on) - statistics.mean(off):7.3f} ms"
    )
    print(line("inside record() per call", in_record))
    print(line("flush after the response", flushes))


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, default=400)
    parser.add_argument("--database-url", default=None)
    args = parser.parse_args()
    if args.database_url:
        os.environ["DATABASE_URL"] = args.database_url

    import django

    django.setup()
    from django.conf import settings

    settings.MEMORY_EMBEDDING_PROVIDER = "hashed"
    settings.WORKSPACE_ROOT = Path(tempfile.mkdtemp(prefix="bench_reads_"))
    from django.db import connection, connections
    from django.test.utils import setup_test_environment

    setup_test_environment()
    old_name = connection.settings_dict["NAME"]
    connection.creation.create_test_db(verbosity=0, autoclobber=True, keepdb=False)
    print(f"database: {connection.vendor}")
    try:
        run(args)
    finally:
        connections.close_all()
        connection.creation.destroy_test_db(old_name, verbosity=0)


if __name__ == "__main__":
    main()
