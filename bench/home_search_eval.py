"""Quality of the memory home's search on a bilingual (English + Chinese) set of one person's memory.

    .venv/bin/python bench/home_search_eval.py [--provider e5|hashed] [--limit 8] [--json out.json]

The data is in ``bench/data/home_search/``: ``memories.json`` holds one user's 100 memories
(half English, half Chinese: drinks, food, work, family, health, travel, habits, preferences)
and the 12 lines of their notes file (``MEMORY.md``); ``queries.json`` holds 74 questions as a
person types them into the home's search box, each naming the memories or notes lines that
answer it. Most are paraphrases; about half are asked in the other language than the answer
("what do I drink" → 我喜欢喝冰美式, 她用什么手机 → "Phone is a Pixel 8").

On a throwaway database (SQLite in memory unless DATABASE_URL is set), the memories are written
through ``memory_create``, the notes file through ``workspace_file_write``, every document is
embedded, then each question runs through ``home_search`` (what the home page, the API and
the MCP search call) with ``--limit`` results. The ranking scored is the list the home shows:
its ranked list of items and notes lines when it has one (``HomeSearch.ranked``), else the
items followed by the notes lines below them. Printed: hit@1, hit@3, hit@8 and MRR@8 (first
relevant result), all questions and by language, and the questions without any relevant hit.
"""

import argparse
import json
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.settings")
os.environ.setdefault("DATABASE_TEST_NAME", f"home_search_eval_{os.getpid()}")
os.environ.setdefault("API_THROTTLE", "off")
DATA = ROOT / "bench" / "data" / "home_search"


def ranking(found, note_keys: dict[str, str], memory_keys: dict[str, str]) -> list[str]:
    ranked = getattr(found, "ranked", None)
    entries = ranked if ranked is not None else [*found.hits, *found.notes]
    keys = []
    for entry in entries:
        memory = getattr(entry, "memory", None)
        if memory is not None:
            keys.append(memory_keys.get(memory.pk, "?"))
        else:
            keys.append(note_keys.get(entry.text.strip(), "?"))
    return keys


def figures(rows: list[dict], limit: int) -> dict:
    n = len(rows) or 1
    ranks = [row["rank"] for row in rows]
    return {
        "questions": len(rows),
        "hit@1": round(sum(r == 1 for r in ranks) / n, 3),
        "hit@3": round(sum(r is not None and r <= 3 for r in ranks) / n, 3),
        f"hit@{limit}": round(sum(r is not None and r <= limit for r in ranks) / n, 3),
        f"MRR@{limit}": round(sum(1 / r for r in ranks if r is not None and r <= limit) / n, 3),
    }


def run(args) -> dict:
    from django.contrib.auth import get_user_model

    from memory_app.home.search import home_search
    from memory_app.memories.models import Origin, Tier
    from memory_app.memories.services import memory_create
    from memory_app.notes import services as notes_services
    from memory_app.search.embedder import embed_pending

    data = json.loads((DATA / "memories.json").read_text(encoding="utf-8"))
    questions = json.loads((DATA / "queries.json").read_text(encoding="utf-8"))["queries"]
    user = get_user_model().objects.create_user(username="mei", password="x")
    memory_keys = {}
    for key, content in data["memories"].items():
        memory = memory_create(actor=user, tier=Tier.USER, kind="fact", content=content, origin=Origin.API)
        memory_keys[memory.pk] = key
    notes_text = "".join(line + "\n" for line in data["notes"].values())
    notes_services.workspace_file_write(user=user, name="MEMORY.md", content=notes_text)
    note_keys = {line.strip(): key for key, line in data["notes"].items()}
    home_search(user=user, query="warm up", limit=args.limit)  # indexes the notes lines where the search does
    started = time.perf_counter()
    embedded = embed_pending()
    print(f"embedded {embedded} documents in {time.perf_counter() - started:.1f}s")
    rows, latencies = [], []
    for question in questions:
        started = time.perf_counter()
        found = home_search(user=user, query=question["q"], limit=args.limit)
        latencies.append((time.perf_counter() - started) * 1000)
        keys = ranking(found, note_keys, memory_keys)
        relevant = set(question["relevant"])
        rank = next((i for i, key in enumerate(keys, start=1) if key in relevant), None)
        rows.append({"q": question["q"], "lang": question["lang"], "rank": rank, "top": keys[:3]})
    report = {"all": figures(rows, args.limit)}
    for lang in ("en", "zh"):
        report[lang] = figures([r for r in rows if r["lang"] == lang], args.limit)
    latencies.sort()
    report["latency_ms"] = {
        "p50": round(latencies[len(latencies) // 2], 1),
        "p95": round(latencies[int(len(latencies) * 0.95) - 1], 1),
    }
    report["missed"] = [r for r in rows if r["rank"] is None]
    report["questions"] = rows
    return report


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--provider", choices=("e5", "hashed"), default="e5")
    parser.add_argument("--limit", type=int, default=8)
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="a lever of memory_app.search.engine or .dense for this run (e.g. STAND_OUT_QUANTILE=0.8)",
    )
    args = parser.parse_args()

    import tempfile

    import django

    django.setup()
    from django.conf import settings

    from memory_app.search import dense, engine

    for lever in args.set:
        name, _, value = lever.partition("=")
        module = dense if hasattr(dense, name) else engine
        old = getattr(module, name)  # an unknown name fails here
        setattr(module, name, value.lower() in ("1", "true", "yes") if isinstance(old, bool) else type(old)(value))
        print(f"{module.__name__}.{name} = {getattr(module, name)!r}")

    settings.MEMORY_EMBEDDING_PROVIDER = args.provider
    settings.MEMORY_EMBED_IN_BACKGROUND = False
    settings.WORKSPACE_ROOT = Path(tempfile.mkdtemp(prefix="home_search_eval_"))
    from search_common import test_database

    with test_database():
        report = run(args)
    for part in ("all", "en", "zh"):
        print(part, report[part])
    print("latency_ms", report["latency_ms"])
    print(f"missed ({len(report['missed'])}):", ", ".join(r["q"] for r in report["missed"]))
    if args.json:
        args.json.write_text(json.dumps(report, ensure_ascii=False, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
