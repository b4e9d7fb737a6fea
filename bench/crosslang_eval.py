"""Search across languages, and searches that should find nothing, on the set of bench/crosslang_gen.py.

    .venv/bin/python bench/crosslang_eval.py [--split dev|heldout|all] [--part quality|empty|all]
                                             [--nonsense-seed N] [--nonsense-kinds set|wide]
                                             [--unrelated FILE] [--json out.json]

On a throwaway database (SQLite in memory unless DATABASE_URL is set) each of the set's nine
users gets their 44 memories twice: as user memories (``memory_create``) and as items of a chat
of their own (``scoped_item_create`` by a service principal, session ``milky:private:<n>``), and
a notes file of six lines; every document is embedded. Then each question is asked of:

- list search: ``GET /api/users/me/memories?q=…`` (DRF's APIClient, the user logged in, page size 5);
- the memory home's search: ``home_search`` (what its page, API and MCP tool call; notes lines
  ranked in the same list);
- ``/api/memory/search``: ``cascade_search`` over the session's scopes (what the view calls),
  hybrid, limit 5 (``keep_best`` off: what it answers by default).

Printed: hit@1 / hit@3 / hit@5 of each search over the questions of the split, by kind of
question (a single word or a question), across languages (EN→ZH, ZH→EN) and within one, beside a
plain BM25 over the user's memories (bench/retrieval_eval.py's); the targets: cross-language
hit@3 ≥ 0.90. Then the share of the 500 nonsense queries and of the 200 unrelated questions that
each search answers with nothing (targets ≥ 0.99 and ≥ 0.95), each query given to one user in turn. ``--nonsense-kinds wide`` asks 560 nonsense queries of other
makers instead (``crosslang_gen.WIDE_MAKERS``: hashes, numbers, emoji, lorem ipsum, gibberish in a
question's frame, …, and salads of real words, reported apart as well).
"""

import argparse
import json
import os
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.settings")
os.environ.setdefault("DATABASE_TEST_NAME", f"crosslang_eval_{os.getpid()}")
os.environ.setdefault("API_THROTTLE", "off")
DATA = ROOT / "bench" / "data" / "crosslang" / "set.json"
SEARCHES = ("list", "home", "api", "bm25")
CROSS_TARGET = 0.90
NONSENSE_TARGET = 0.99
UNRELATED_TARGET = 0.95


def setup_users(data: dict) -> list[dict]:
    from django.contrib.auth import get_user_model

    from identity_app.services import user_grant_service
    from memory_app.home.search import home_search
    from memory_app.memories.models import Origin, Tier
    from memory_app.memories.services import memory_create
    from memory_app.notes import services as notes_services
    from memory_app.scoped.services import scoped_item_create

    User = get_user_model()
    svc = User.objects.create_user(username="xl-svc", password="x")
    user_grant_service(user=svc)
    worlds = []
    for n, block in enumerate(data["users"]):
        user = User.objects.create_user(username=block["user"], password="x")
        session = f"milky:private:{39000 + n}"
        keys: dict[str, str] = {}
        for memory in block["memories"]:
            memory_create(actor=user, tier=Tier.USER, kind="fact", content=memory["content"], origin=Origin.API)
            scoped_item_create(actor=svc, kind="fact", content=memory["content"], session_id=session)
            keys[memory["content"]] = memory["key"]
        notes_services.workspace_file_write(
            user=user, name="MEMORY.md", content="".join(f"{x}\n" for x in block["notes"])
        )
        home_search(user=user, query="warm up")  # indexes the notes lines where the search does
        worlds.append({"user": user, "session": session, "keys": keys, "block": block})
    return worlds


def searches(world: dict, query: str) -> dict[str, list[str]]:
    """The keys each search answers ``query`` with, best first ("note" for a notes line)."""
    from rest_framework.test import APIClient

    from memory_app.home.search import NotesHit, home_search
    from memory_app.scoped.scope import cascade_scopes
    from memory_app.scoped.search import cascade_search

    keys = world["keys"]
    client = world.setdefault("client", APIClient())
    client.force_authenticate(world["user"])
    response = client.get("/api/users/me/memories", {"q": query, "page_size": 5})
    assert response.status_code == 200, response.content
    listed = [keys.get(row["content"], "?") for row in response.json()["results"]]
    found = home_search(user=world["user"], query=query, limit=8)
    home = ["note" if isinstance(e, NotesHit) else keys.get(e.memory.content, "?") for e in found.ranked]
    hits = cascade_search(scopes=cascade_scopes(world["session"]), query=query, limit=5, mode="hybrid")
    api = [keys.get(hit.content, "?") for hit in hits]
    bm25, contents = world["bm25"]
    return {"list": listed, "home": home, "api": api, "bm25": [keys[contents[i]] for i in bm25.rank(query, 5)]}


def rank_of(keys: list[str], answer: str) -> int | None:
    return next((i for i, key in enumerate(keys, start=1) if key == answer), None)


def figures(rows: list[dict], search: str) -> str:
    n = len(rows)
    if not n:
        return "     —     —     — "
    ranks = [row["ranks"][search] for row in rows]
    return " ".join(f"{sum(r is not None and r <= k for r in ranks) / n:5.3f}" for k in (1, 3, 5)) + " "


def quality(worlds: list[dict], split: str, report: dict) -> None:
    from retrieval_eval import OkapiBM25

    rows, latencies = [], []
    for world in worlds:
        block = world["block"]
        if split != "all" and block["split"] != split:
            continue
        contents = [m["content"] for m in block["memories"]]
        world["bm25"] = (OkapiBM25(contents), contents)
        for question in block["questions"]:
            started = time.perf_counter()
            answered = searches(world, question["q"])
            latencies.append((time.perf_counter() - started) * 1000)
            ranks = {name: rank_of(keys, question["answer"]) for name, keys in answered.items()}
            rows.append({**question, "user": block["user"], "ranks": ranks, "top": answered})
    groups: dict[str, list[dict]] = defaultdict(list)
    for row in rows:
        where = "across" if row["cross"] else "same"
        groups["all"].append(row)
        groups[f"{where} languages"].append(row)
        groups[f"{where}: {row['from'].upper()}→{row['to'].upper()}"].append(row)
        groups[f"{where}: {row['kind']}s"].append(row)
        groups[f"{where}: {row['origin']}"].append(row)
    print(
        f"\n{len(rows)} questions ({split}); hit@1 hit@3 hit@5 per search; target: across languages hit@3 ≥ {CROSS_TARGET}"
    )
    print(f"{'':28} {'n':>4}  " + " | ".join(f"{name:^17}" for name in SEARCHES))
    for name in sorted(groups, key=lambda g: (g != "all", not g.startswith("across"), g)):
        print(f"{name:28} {len(groups[name]):>4}  " + "|".join(figures(groups[name], s) for s in SEARCHES))
    for search in SEARCHES:
        across = groups["across languages"]
        if across:
            value = sum(r["ranks"][search] is not None and r["ranks"][search] <= 3 for r in across) / len(across)
            verdict = "met" if value >= CROSS_TARGET else "SHORT"
            if search != "bm25":
                print(f"{search}: across languages hit@3 {value:.3f} (target ≥ {CROSS_TARGET}: {verdict})")
    latencies.sort()
    print(f"latency of the three searches together: p50 {latencies[len(latencies) // 2]:.1f} ms")
    report["quality"] = {
        name: {
            s: {
                f"hit@{k}": round(sum(r["ranks"][s] is not None and r["ranks"][s] <= k for r in g) / len(g), 3)
                for k in (1, 3, 5)
            }
            for s in SEARCHES
        }
        | {"n": len(g)}
        for name, g in groups.items()
    }
    report["missed_across"] = [
        {
            "user": r["user"],
            "q": r["q"],
            "answer": r["answer"],
            "home": r["top"]["home"][:3],
            "list": r["top"]["list"][:3],
        }
        for r in rows
        if r["cross"] and (r["ranks"]["home"] or 9) > 3
    ]


def empty(worlds: list[dict], data: dict, report: dict) -> None:
    from crosslang_gen import SALADS, WIDE_MAKERS

    for part, queries, target in (
        ("nonsense", data["nonsense"], NONSENSE_TARGET),
        ("unrelated", data["unrelated"], UNRELATED_TARGET),
    ):
        counts: dict[str, dict[str, list[int]]] = defaultdict(lambda: defaultdict(lambda: [0, 0]))
        found_something = []
        for n, query in enumerate(queries):
            world = worlds[n % len(worlds)]
            answered = searches_without_bm25(world, query["q"])
            group = query.get("kind") or query.get("lang")
            groups = ("all", group)
            if part == "nonsense" and query.get("kind") in WIDE_MAKERS and group not in SALADS:
                groups += ("no salads",)
            for name, keys in answered.items():
                for key in groups:
                    counts[key][name][0] += not keys
                    counts[key][name][1] += 1
            if any(answered.values()):
                found_something.append({"q": query["q"], **{k: v[:3] for k, v in answered.items()}})
        print(f"\n{part}: share answered with nothing (target ≥ {target})")
        for key in sorted(counts, key=lambda k: k != "all"):
            line = "  ".join(f"{name} {c[0] / c[1]:.3f} ({c[0]}/{c[1]})" for name, c in counts[key].items())
            print(f"  {key:10} {line}")
        for name, c in counts["all"].items():
            value = c[0] / c[1]
            print(f"  {name}: {value:.3f} (target ≥ {target}: {'met' if value >= target else 'SHORT'})")
        report[part] = {key: {name: round(c[0] / c[1], 3) for name, c in per.items()} for key, per in counts.items()}
        report[f"{part}_found"] = found_something


def searches_without_bm25(world: dict, query: str) -> dict[str, list[str]]:
    world["bm25"] = (_NoBM25(), [])
    answered = searches(world, query)
    answered.pop("bm25")
    return answered


class _NoBM25:
    def rank(self, query, limit):
        return []


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--split", choices=("dev", "heldout", "all"), default="dev")
    parser.add_argument("--part", choices=("quality", "empty", "all"), default="all")
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument(
        "--nonsense-kinds",
        choices=("set", "wide"),
        default="set",
        help="wide: 560 nonsense queries of other makers than the set's (crosslang_gen.WIDE_MAKERS), written after "
        "the gates were chosen; with --nonsense-seed, drawn with that seed",
    )
    parser.add_argument(
        "--nonsense-seed",
        type=int,
        default=None,
        help="ask 500 nonsense queries drawn afresh with this seed (bench/crosslang_gen.py's makers) instead of the set's: "
        "a change fitted to the set's own draw shows here",
    )
    parser.add_argument(
        "--unrelated",
        type=Path,
        default=None,
        help="ask the unrelated questions of this JSON file instead of the set's (e.g. "
        "bench/data/crosslang/unrelated_later.json: 100 written after the question gates were chosen; "
        "unrelated_third.json: 100 more, written before the stand-out gate took more background questions; "
        "unrelated_fourth.json: 100 more, written before any change that followed the third set; "
        "unrelated_fifth.json: 100 more, written before any change that followed the fourth set; "
        "unrelated_sixth.json: 100 more, written before any change that followed the fifth set; "
        "unrelated_seventh.json: 100 more, none asked before in any set, written after the last change to the "
        "search and measured once, unchanged; unrelated_eighth.json: the same, a session later)",
    )
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="a lever of memory_app.search.engine, .dense or memory_app.scoped.search for this run (e.g. BACKGROUND_MARGIN=0.03)",
    )
    args = parser.parse_args()

    import django

    django.setup()
    from django.conf import settings

    settings.MEMORY_EMBEDDING_PROVIDER = os.environ.get("MEMORY_EMBEDDING_PROVIDER", "e5")
    settings.MEMORY_EMBED_IN_BACKGROUND = False
    settings.WORKSPACE_ROOT = Path(tempfile.mkdtemp(prefix="crosslang_eval_"))
    from django.db import connection
    from search_common import test_database

    from memory_app.scoped import search as scoped_search
    from memory_app.search import dense, engine
    from memory_app.search.embedder import embed_pending

    for lever in args.set:
        name, _, value = lever.partition("=")
        module = next((m for m in (engine, dense) if hasattr(m, name)), scoped_search)
        old = getattr(module, name)  # an unknown name fails here
        setattr(module, name, type(old)(value) if not isinstance(old, bool) else value.lower() in ("1", "true", "yes"))
        print(f"{module.__name__}.{name} = {getattr(module, name)!r}")
    data = json.loads(DATA.read_text(encoding="utf-8"))
    if args.nonsense_seed is not None:
        import crosslang_gen

        crosslang_gen.SEED = args.nonsense_seed
        data["nonsense"] = crosslang_gen.nonsense()
    if args.nonsense_kinds == "wide":
        import crosslang_gen

        data["nonsense"] = crosslang_gen.nonsense_wide(
            seed=crosslang_gen.SEED if args.nonsense_seed is None else args.nonsense_seed
        )
    if args.unrelated is not None:
        data["unrelated"] = json.loads(args.unrelated.read_text(encoding="utf-8"))
    report: dict = {"split": args.split}
    with test_database():
        started = time.perf_counter()
        worlds = setup_users(data)
        embedded = embed_pending()
        print(
            f"database: {connection.vendor}; {len(worlds)} users; embedded {embedded} documents in {time.perf_counter() - started:.1f}s"
        )
        if args.part in ("quality", "all"):
            quality(worlds, args.split, report)
        if args.part in ("empty", "all"):
            empty(worlds, data, report)
    if args.json:
        args.json.write_text(json.dumps(report, ensure_ascii=False, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
