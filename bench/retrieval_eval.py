"""Retrieval quality of the service on a bilingual (English + Chinese) personal-assistant set.

    .venv/bin/python bench/retrieval_eval.py                    # SQLite, throwaway in-memory database
    DATABASE_URL=postgresql://postgres@127.0.0.1:5432/postgres .venv/bin/python bench/retrieval_eval.py
    options: --part chats|memories|all  --lang en|zh|all  --limit N  --json out.json

The data is in ``bench/data/retrieval/`` (format in its README.md): ten users, each with
several chat threads (``chats_<user>.json``) and a set of remembered facts (``memories.json``),
plus questions written as a user would ask them, each naming the turns or memories that hold
the answer. Most questions are paraphrases; some are asked in the other language, about dates,
about facts that changed, or about facts spread over several turns.

Everything goes through the REST API with real tokens, on a throwaway database (created and
dropped here, like the other bench scripts):

- users and a service principal get tokens from ``manage.py issue_token``;
- each thread is a conversation written by the service principal as a runtime would: a
  ``chat`` run, the turns as messages of that run, then the run finished;
- each memory is stored twice: ``POST /api/users/me/memories`` with the user's token and
  ``POST /api/memory/items`` (service token, the user's private chat session);
- ``manage.py refresh_embeddings`` runs before any question.

Questions:

- chats: ``search_thread_messages`` (limit 10) of a fresh top-level run of the user → hit@1,
  hit@5, hit@10, MRR@10 (a hit is any answer turn among the results);
- memories: ``/api/memory/search`` (the user's session, limit 5) and
  ``GET /api/users/me/memories?search=…`` (page size 5) → hit@1, hit@5, MRR@5.

Three passes: lexical, dense, hybrid. ``/api/memory/search`` takes its ``mode`` parameter
(fts, vector, hybrid); history search and the memory list run under
``override_settings(MEMORY_SEARCH_MODE=…)``. A plain Okapi BM25 computed here (own
tokenizer: lower-cased words, Chinese character bigrams; no stemming, no stop words) over the
same turns and memories is printed next to them. Latency is per API call, p50/p95.
"""

import argparse
import io
import json
import math
import os
import re
import sys
import time
import unicodedata
from collections import Counter, defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.settings")
os.environ.setdefault("DATABASE_TEST_NAME", f"retrieval_eval_{os.getpid()}")
os.environ.setdefault("API_THROTTLE", "off")

DATA_DIR = ROOT / "bench" / "data" / "retrieval"
MODES = ("lexical", "dense", "hybrid")
SCOPED_MODE = {"lexical": "fts", "dense": "vector", "hybrid": "hybrid"}
BM25 = "bm25"
CHAT_LIMIT = 10
MEMORY_LIMIT = 5


class EvalError(RuntimeError):
    pass


# --- data ------------------------------------------------------------------------------------
def load_chats() -> list[dict]:
    return [json.loads(p.read_text(encoding="utf-8")) for p in sorted(DATA_DIR.glob("chats_*.json"))]


def load_memories() -> dict:
    return json.loads((DATA_DIR / "memories.json").read_text(encoding="utf-8"))


def pick_questions(groups: list[tuple[str, list[dict]]], lang: str, limit: int | None) -> list[tuple[str, dict]]:
    """(user, question) pairs of the wanted language, taken round-robin over the users so a
    ``limit`` still covers every user."""
    queues = [[(user, q) for q in questions if lang == "all" or q["lang"] == lang] for user, questions in groups]
    picked = []
    while any(queues):
        for queue in queues:
            if queue:
                picked.append(queue.pop(0))
    return picked[:limit] if limit else picked


# --- plain Okapi BM25 ------------------------------------------------------------------------
_RUN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]+|[^\W_]+", re.UNICODE)
_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")


def bm25_tokens(text: str) -> list[str]:
    tokens = []
    for run in _RUN.findall(unicodedata.normalize("NFKC", text).casefold()):
        if _CJK.match(run):
            tokens.extend([run] if len(run) == 1 else [run[i : i + 2] for i in range(len(run) - 1)])
        else:
            tokens.append(run)
    return tokens


class OkapiBM25:
    def __init__(self, docs: list[str], k1: float = 1.2, b: float = 0.75):
        self.k1, self.b = k1, b
        self.docs = [Counter(bm25_tokens(d)) for d in docs]
        self.lengths = [sum(c.values()) for c in self.docs]
        self.avg = (sum(self.lengths) / len(self.lengths)) if self.docs else 0.0
        df = Counter(term for c in self.docs for term in c)
        n = len(self.docs)
        self.idf = {t: math.log(1 + (n - f + 0.5) / (f + 0.5)) for t, f in df.items()}

    def rank(self, query: str, limit: int) -> list[int]:
        terms = set(bm25_tokens(query))
        scored = []
        for i, counts in enumerate(self.docs):
            score = 0.0
            norm = self.k1 * (1 - self.b + self.b * self.lengths[i] / (self.avg or 1))
            for t in terms:
                tf = counts.get(t)
                if tf:
                    score += self.idf[t] * tf * (self.k1 + 1) / (tf + norm)
            if score > 0:
                scored.append((-score, i))
        return [i for _, i in sorted(scored)[:limit]]


# --- metrics and tables ----------------------------------------------------------------------
def first_rank(result_keys: list, answers: set) -> int | None:
    for position, key in enumerate(result_keys, start=1):
        if key in answers:
            return position
    return None


def metrics(ranks: list[int | None], ks: tuple[int, ...], mrr_at: int) -> dict:
    n = len(ranks) or 1
    out = {f"hit@{k}": sum(1 for r in ranks if r is not None and r <= k) / n for k in ks}
    out[f"mrr@{mrr_at}"] = sum(1 / r for r in ranks if r is not None and r <= mrr_at) / n
    return out


def percentile(values: list[float], pct: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(pct / 100 * (len(ordered) - 1))))]


def breakdown_keys(question: dict) -> list[str]:
    return ["all", f"lang={question['lang']}", f"type={question['type']}", f"difficulty={question['difficulty']}"]


def print_table(title: str, records: list[dict], systems: list[tuple[str, str]], ks: tuple[int, ...], mrr_at: int):
    """``records``: one per question, with ``question`` and ``ranks`` {system: rank}."""
    groups: dict[str, list[dict]] = defaultdict(list)
    for record in records:
        for key in breakdown_keys(record["question"]):
            groups[key].append(record)
    order = sorted(groups, key=lambda k: (k != "all", k.split("=")[0] != "lang", k.split("=")[0] != "type", k))
    names = [f"hit@{k}" for k in ks] + [f"mrr@{mrr_at}"]
    short = [f"h@{k}" for k in ks] + ["MRR"]
    cell = 5 * len(names) + len(names) - 1
    print(f"\n{title}")
    print(f"{'':24}{'n':>5}  " + " | ".join(f"{label[:cell]:^{cell}}" for _, label in systems))
    print(f"{'':24}{'':>5}  " + " | ".join(" ".join(f"{s:>5}" for s in short) for _ in systems))
    for key in order:
        rows = groups[key]
        cells = []
        for system, _ in systems:
            m = metrics([r["ranks"][system] for r in rows], ks, mrr_at)
            cells.append(" ".join(f"{m[name]:5.3f}" for name in names))
        print(f"{key:24}{len(rows):>5}  " + " | ".join(cells))


def summary(records: list[dict], systems: list[str], ks: tuple[int, ...], mrr_at: int) -> dict:
    out = {}
    for system in systems:
        groups: dict[str, list] = defaultdict(list)
        for record in records:
            for key in breakdown_keys(record["question"]):
                groups[key].append(record["ranks"][system])
        out[system] = {key: {"n": len(r), **metrics(r, ks, mrr_at)} for key, r in sorted(groups.items())}
    return out


def latency_line(label: str, timings: dict[str, list[float]]) -> str:
    parts = [
        f"{mode} p50 {percentile(v, 50):.1f} / p95 {percentile(v, 95):.1f} ms (n={len(v)})"
        for mode, v in timings.items()
        if v
    ]
    return f"latency {label}: " + "; ".join(parts)


def identical_note(records: list[dict], modes: tuple[str, ...]) -> str | None:
    same = [m for m in modes[1:] if all(r["results"][m] == r["results"][modes[0]] for r in records)]
    if same:
        return f"note: {', '.join(same)} returned exactly the same results as {modes[0]} for every question"
    return None


# --- API -------------------------------------------------------------------------------------
class Api:
    """An API client with one credential; every call is timed and must succeed."""

    def __init__(self, authorization: str | None):
        from rest_framework.test import APIClient

        self.client = APIClient()
        self.last_status = None
        if authorization:
            self.client.credentials(HTTP_AUTHORIZATION=authorization)

    def call(self, method: str, path: str, data=None, ok=(200, 201)) -> tuple[dict, float]:
        start = time.perf_counter()
        if method == "get":
            response = self.client.get(path, data or {})
        else:
            response = getattr(self.client, method)(path, data or {}, format="json")
        elapsed = (time.perf_counter() - start) * 1000
        self.last_status = response.status_code
        if response.status_code not in ok:
            raise EvalError(f"{method.upper()} {path} → {response.status_code}: {response.content[:300]!r}")
        body = response.json() if response.content else {}
        return body, elapsed

    def post(self, path: str, data=None, ok=(200, 201)) -> dict:
        return self.call("post", path, data, ok)[0]


def issue_token(username: str, *flags: str) -> str:
    from django.core.management import call_command

    out = io.StringIO()
    call_command("issue_token", username, "--create-user", *flags, stdout=out, stderr=io.StringIO())
    return out.getvalue().strip().splitlines()[-1]


class World:
    """The users, their tokens and the service principal, created once per evaluation."""

    def __init__(self):
        self.service = Api(f"Token {issue_token('eval-runtime', '--service')}")
        self.users: dict[str, Api] = {}

    def user(self, username: str, display_name: str | None = None) -> Api:
        if username not in self.users:
            api = Api(f"Token {issue_token(username)}")
            if display_name:
                api.call("put", "/api/users/me/profile", {"display_name": display_name})
            self.users[username] = api
        return self.users[username]


# --- chats -----------------------------------------------------------------------------------
def load_chat_user(world: World, data: dict) -> dict[int, tuple[int, int]]:
    """Writes every thread of one user as a runtime would; returns message id → (thread, turn)."""
    username = data["user"]
    world.user(username, data.get("display_name"))
    svc = world.service
    where = {}
    for t, thread in enumerate(data["threads"]):
        conversation = svc.post("/api/conversations", {"user": username, "title": thread["title"]})
        run = svc.post(
            "/api/runs",
            {
                "user": username,
                "conversation_id": conversation["id"],
                "request_id": f"load-{username}-{t}",
                "worker_id": "eval-loader",
                "kind": "chat",
                "lease_seconds": 600,
                "prompt": thread["turns"][0],
            },
        )
        for i, text in enumerate(thread["turns"]):
            message = svc.post(
                f"/api/conversations/{conversation['id']}/messages",
                {"role": "user" if i % 2 == 0 else "assistant", "content": text, "run_id": run["id"]},
            )
            where[message["id"]] = (t, i)
        Api(f"Run {run['run_token']}").post(f"/api/runs/{run['id']}/finish", {"status": "completed"})
    return where


def asking_run(world: World, username: str) -> tuple[Api, str]:
    svc = world.service
    conversation = svc.post("/api/conversations", {"user": username, "title": "New chat"})
    run = svc.post(
        "/api/runs",
        {
            "user": username,
            "conversation_id": conversation["id"],
            "request_id": f"ask-{username}",
            "worker_id": "eval-asker",
            "kind": "chat",
            "lease_seconds": 3600,
            "prompt": "Hello",
        },
    )
    return Api(f"Run {run['run_token']}"), run["id"]


def write_chats(world: World, args, report: dict):
    chats = load_chats()
    t0 = time.perf_counter()
    positions = {}
    for data in chats:
        positions[data["user"]] = load_chat_user(world, data)
    turns = sum(len(th["turns"]) for d in chats for th in d["threads"])
    threads = sum(len(d["threads"]) for d in chats)
    load_s = time.perf_counter() - t0
    print(f"chats: {len(chats)} users, {threads} threads, {turns} turns written through the API in {load_s:.1f}s")
    report["timings_s"]["chats_load"] = round(load_s, 2)
    return chats, positions


def ask_chats(world: World, args, report: dict, chats: list[dict], positions: dict):
    from django.test import override_settings

    picked = pick_questions([(d["user"], d["questions"]) for d in chats], args.lang, args.limit)
    by_user = {d["user"]: d for d in chats}
    bm25 = {
        d["user"]: (
            OkapiBM25([turn for th in d["threads"] for turn in th["turns"]]),
            [(t, i) for t, th in enumerate(d["threads"]) for i in range(len(th["turns"]))],
        )
        for d in chats
    }
    runs = {user: asking_run(world, user) for user in by_user}
    records = [{"user": u, "question": q, "ranks": {}, "results": {}, "errors": {}} for u, q in picked]
    timings = {m: [] for m in (*MODES, BM25)}
    t0 = time.perf_counter()
    for mode in MODES:
        for api, run_id in runs.values():
            api.post(f"/api/runs/{run_id}/heartbeat", {"lease_seconds": 3600})
        with override_settings(MEMORY_SEARCH_MODE=mode):
            for record in records:
                api, run_id = runs[record["user"]]
                body, ms = api.call(
                    "post",
                    f"/api/runs/{run_id}/tools/search_thread_messages",
                    {"query": record["question"]["query"], "limit": CHAT_LIMIT},
                    ok=(200, 400),
                )
                timings[mode].append(ms)
                if "results" not in body:
                    record["errors"][mode] = body.get("error", {}).get("code", "error")
                    keys = []
                else:
                    keys = [positions[record["user"]].get(hit["message_id"]) for hit in body["results"]]
                answers = {tuple(a) for a in record["question"]["answers"]}
                record["results"][mode] = keys
                record["ranks"][mode] = first_rank(keys, answers)
    for record in records:
        index, keys = bm25[record["user"]]
        start = time.perf_counter()
        found = [keys[i] for i in index.rank(record["question"]["query"], CHAT_LIMIT)]
        timings[BM25].append((time.perf_counter() - start) * 1000)
        record["results"][BM25] = found
        record["ranks"][BM25] = first_rank(found, {tuple(a) for a in record["question"]["answers"]})
    ask_s = time.perf_counter() - t0
    report["timings_s"]["chats_ask"] = round(ask_s, 2)

    systems = [(m, m) for m in MODES] + [(BM25, "BM25 (harness)")]
    print_table(
        f"search_thread_messages — {len(records)} questions, limit {CHAT_LIMIT} "
        f"(hit@k, MRR@{CHAT_LIMIT}; asked in {ask_s:.1f}s)",
        records,
        systems,
        (1, 5, 10),
        CHAT_LIMIT,
    )
    print(latency_line("search_thread_messages", {m: timings[m] for m in MODES}))
    print(latency_line("harness BM25 (in-process)", {BM25: timings[BM25]}))
    errors = Counter(code for r in records for code in r["errors"].values())
    if errors:
        print(f"refused questions (counted as misses): {dict(errors)}")
    note = identical_note(records, MODES)
    if note:
        print(note)
    report["chats"] = {
        "summary": summary(records, [*MODES, BM25], (1, 5, 10), CHAT_LIMIT),
        "latency_ms": {
            m: {"p50": percentile(v, 50), "p95": percentile(v, 95), "n": len(v)} for m, v in timings.items()
        },
        "questions": [
            {
                "id": r["question"]["id"],
                "user": r["user"],
                "query": r["question"]["query"],
                "lang": r["question"]["lang"],
                "type": r["question"]["type"],
                "ranks": r["ranks"],
                "errors": r["errors"],
            }
            for r in records
        ],
    }


# --- memories --------------------------------------------------------------------------------
def load_memory_users(world: World, data: dict) -> tuple[dict, dict]:
    """Returns (user-tier API id → data id, scoped API id → set of data ids)."""
    names = {chat["user"]: chat.get("display_name") for chat in load_chats()}
    user_ids, scoped_ids = {}, defaultdict(set)
    for block in data["users"]:
        api = world.user(block["user"], names.get(block["user"]))
        for memory in block["memories"]:
            created = api.post("/api/users/me/memories", {"kind": memory["kind"], "content": memory["content"]})
            user_ids[str(created["id"])] = memory["id"]
            item = world.service.post(
                "/api/memory/items",
                {"content": memory["content"], "kind": memory["kind"], "session_id": block["session_id"]},
            )
            scoped_ids[str(item["id"])].add(memory["id"])
    return user_ids, scoped_ids


def scoped_search_method(world: World, session_id: str) -> str:
    """``/api/memory/search`` takes a JSON body by POST; a GET with query parameters is used
    instead if the endpoint answers POST with 405."""
    body = {"query": "probe", "session_id": session_id, "limit": 1, "mode": "fts"}
    world.service.call("post", "/api/memory/search", body, ok=(200, 405))
    return "post" if world.service.last_status == 200 else "get"


def list_search_param(api: Api, total: int) -> str:
    """The memory list's free-text parameter: ``search`` if the list filters by it, else
    ``q`` (all words must occur). A query matching nothing tells them apart."""
    from django.test import override_settings

    with override_settings(MEMORY_SEARCH_MODE="lexical"):
        body, _ = api.call("get", "/api/users/me/memories", {"search": "qqzxv wwpkt", "page_size": 50})
    return "q" if body.get("count", len(body.get("results", []))) >= total else "search"


def write_memories(world: World, args, report: dict):
    data = load_memories()
    t0 = time.perf_counter()
    user_ids, scoped_ids = load_memory_users(world, data)
    load_s = time.perf_counter() - t0
    count = sum(len(b["memories"]) for b in data["users"])
    print(
        f"memories: {count} facts of {len(data['users'])} users, each stored as a user memory "
        f"and as a scoped item ({load_s:.1f}s)"
    )
    report["timings_s"]["memories_load"] = round(load_s, 2)
    return data, user_ids, scoped_ids


def ask_memories(world: World, args, report: dict, data: dict, user_ids: dict, scoped_ids: dict):
    from django.test import override_settings

    blocks = {b["user"]: b for b in data["users"]}
    picked = pick_questions([(b["user"], b["questions"]) for b in data["users"]], args.lang, args.limit)
    method = scoped_search_method(world, data["users"][0]["session_id"])
    param = list_search_param(world.user(data["users"][0]["user"]), len(data["users"][0]["memories"]))

    # Harness BM25 over what each endpoint can see: the user's own memories for the list; the
    # user's chat-scoped items plus every global item for the scoped search.
    from memory_app.scoped.scope import CHAT_SCOPED_KINDS

    global_items = [m for b in data["users"] for m in b["memories"] if m["kind"] not in CHAT_SCOPED_KINDS]
    bm25_user, bm25_scoped = {}, {}
    for user, block in blocks.items():
        own = block["memories"]
        bm25_user[user] = (OkapiBM25([m["content"] for m in own]), [m["id"] for m in own])
        visible = [m for m in own if m["kind"] in CHAT_SCOPED_KINDS] + global_items
        bm25_scoped[user] = (OkapiBM25([m["content"] for m in visible]), [m["id"] for m in visible])

    endpoints = ("scoped", "list")
    records = {e: [{"user": u, "question": q, "ranks": {}, "results": {}} for u, q in picked] for e in endpoints}
    timings = {e: {m: [] for m in (*MODES, BM25)} for e in endpoints}
    t0 = time.perf_counter()
    for mode in MODES:
        for record in records["scoped"]:
            block = blocks[record["user"]]
            body, ms = world.service.call(
                method,
                "/api/memory/search",
                {
                    "query": record["question"]["query"],
                    "session_id": block["session_id"],
                    "limit": MEMORY_LIMIT,
                    "mode": SCOPED_MODE[mode],
                },
            )
            timings["scoped"][mode].append(ms)
            hits = [scoped_ids.get(str(hit["id"]), set()) for hit in body["results"]]
            answers = set(record["question"]["answers"])
            record["results"][mode] = [sorted(h) for h in hits]
            record["ranks"][mode] = next((i for i, h in enumerate(hits, 1) if h & answers), None)
        with override_settings(MEMORY_SEARCH_MODE=mode):
            for record in records["list"]:
                api = world.user(record["user"])
                body, ms = api.call(
                    "get", "/api/users/me/memories", {param: record["question"]["query"], "page_size": MEMORY_LIMIT}
                )
                timings["list"][mode].append(ms)
                keys = [user_ids.get(str(row["id"])) for row in body["results"][:MEMORY_LIMIT]]
                record["results"][mode] = keys
                record["ranks"][mode] = first_rank(keys, set(record["question"]["answers"]))
    for endpoint, indexes in (("scoped", bm25_scoped), ("list", bm25_user)):
        for record in records[endpoint]:
            index, keys = indexes[record["user"]]
            start = time.perf_counter()
            found = [keys[i] for i in index.rank(record["question"]["query"], MEMORY_LIMIT)]
            timings[endpoint][BM25].append((time.perf_counter() - start) * 1000)
            record["results"][BM25] = found
            record["ranks"][BM25] = first_rank(found, set(record["question"]["answers"]))
    ask_s = time.perf_counter() - t0
    report["timings_s"]["memories_ask"] = round(ask_s, 2)

    titles = {
        "scoped": (
            f"/api/memory/search ({method.upper()}, session of the user, limit {MEMORY_LIMIT}; "
            "modes fts / vector / hybrid)",
            [(m, f"{m} ({SCOPED_MODE[m]})") for m in MODES] + [(BM25, "BM25 chat+global")],
        ),
        "list": (
            f"GET /api/users/me/memories?{param}=… (page size {MEMORY_LIMIT}; MEMORY_SEARCH_MODE per pass)",
            [(m, m) for m in MODES] + [(BM25, "BM25 own memories")],
        ),
    }
    report["memories"] = {"list_param": param, "search_method": method}
    for endpoint in endpoints:
        title, systems = titles[endpoint]
        print_table(
            f"{title} — {len(records[endpoint])} questions (hit@k, MRR@{MEMORY_LIMIT})",
            records[endpoint],
            systems,
            (1, 5),
            MEMORY_LIMIT,
        )
        print(latency_line(endpoint, {m: timings[endpoint][m] for m in MODES}))
        answered = {
            m: sum(1 for r in records[endpoint] if r["results"][m]) / (len(records[endpoint]) or 1) for m in MODES
        }
        print("questions with at least one result: " + ", ".join(f"{m} {v:.2f}" for m, v in answered.items()))
        note = identical_note(records[endpoint], MODES)
        if note:
            print(note)
        report["memories"][endpoint] = {
            "summary": summary(records[endpoint], [*MODES, BM25], (1, 5), MEMORY_LIMIT),
            "latency_ms": {
                m: {"p50": percentile(v, 50), "p95": percentile(v, 95), "n": len(v)}
                for m, v in timings[endpoint].items()
            },
            "questions": [
                {
                    "id": r["question"]["id"],
                    "user": r["user"],
                    "lang": r["question"]["lang"],
                    "type": r["question"]["type"],
                    "ranks": r["ranks"],
                }
                for r in records[endpoint]
            ],
        }
    if param == "q":
        print(
            "note: the memory list has no 'search' parameter here, so its questions went to 'q' "
            "(every word must occur in the memory)"
        )


# --- main ------------------------------------------------------------------------------------
def run(args) -> dict:
    from django.conf import settings
    from django.core.management import call_command
    from django.db import connection

    report = {
        "database": connection.vendor,
        "embedding_provider": getattr(settings, "MEMORY_EMBEDDING_PROVIDER", "?"),
        "args": {"part": args.part, "lang": args.lang, "limit": args.limit},
        "timings_s": {},
    }
    print(
        f"database: {connection.vendor}; embedding provider: {report['embedding_provider']}; "
        f"MEMORY_SEARCH_MODE default: {getattr(settings, 'MEMORY_SEARCH_MODE', '(not a setting)')}"
    )
    world = World()
    chats = memories = None
    if args.part in ("chats", "all"):
        chats = write_chats(world, args, report)
    if args.part in ("memories", "all"):
        memories = write_memories(world, args, report)
    t0 = time.perf_counter()
    out = io.StringIO()
    call_command("refresh_embeddings", stdout=out, stderr=io.StringIO())
    embed_s = time.perf_counter() - t0
    last = (out.getvalue().strip().splitlines() or [""])[-1]
    print(f"refresh_embeddings: {embed_s:.1f}s ({last})")
    report["timings_s"]["refresh_embeddings"] = round(embed_s, 2)
    if chats:
        ask_chats(world, args, report, *chats)
    if memories:
        ask_memories(world, args, report, *memories)
    return report


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--part", choices=("chats", "memories", "all"), default="all")
    parser.add_argument("--lang", choices=("en", "zh", "all"), default="all", help="language of the questions")
    parser.add_argument("--limit", type=int, default=None, help="at most N questions per part (spread over users)")
    parser.add_argument("--json", type=Path, default=None, help="write figures and per-question ranks here")
    parser.add_argument(
        "--provider", choices=("e5", "hashed"), default="e5", help="embedding model (default: the product default)"
    )
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="MODULE.NAME=VALUE",
        help="a lever: a number of memory_app.search.engine, .dense or memory_app.threads.history, "
        "e.g. engine.COVERAGE_POWER=2",
    )
    args = parser.parse_args()

    import django

    django.setup()
    from django.conf import settings

    from memory_app.search import dense, engine
    from memory_app.threads import history

    for lever in args.set:
        name, _, value = lever.partition("=")
        module, _, attribute = name.partition(".")
        target = {"engine": engine, "dense": dense, "history": history}.get(module)
        if target is None or not hasattr(target, attribute):
            parser.error(f"unknown lever {name}")
        try:
            setattr(target, attribute, int(value) if value.lstrip("-").isdigit() else float(value))
        except ValueError:
            parser.error(f"lever {name}: {value!r} is not a number")
        print(f"lever {name} = {value}")
    settings.MEMORY_EMBEDDING_PROVIDER = args.provider
    settings.MEMORY_EMBED_IN_BACKGROUND = False  # refresh_embeddings embeds everything before the questions
    from search_common import test_database

    start = time.perf_counter()
    with test_database():
        report = run(args)
    report["timings_s"]["total"] = round(time.perf_counter() - start, 2)
    print(f"\ntotal {report['timings_s']['total']:.1f}s")
    if args.json:
        args.json.write_text(json.dumps(report, ensure_ascii=False, indent=1), encoding="utf-8")
        print(f"wrote {args.json}")


if __name__ == "__main__":
    main()
