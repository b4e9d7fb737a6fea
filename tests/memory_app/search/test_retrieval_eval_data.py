"""Structure of the retrieval evaluation set (bench/data/retrieval/), not its scores: every
answer points at a turn or memory that exists, ids are unique, both languages are present."""

import json
import re
from collections import Counter
from pathlib import Path

import pytest

from memory_app.memories.models import IDENTITY_KINDS
from memory_app.scoped.scope import CHAT_SCOPED_KINDS

DATA = Path(__file__).resolve().parents[3] / "bench" / "data" / "retrieval"
CHAT_TYPES = {"lexical", "paraphrase", "crosslingual", "temporal", "multi_turn", "update"}
MEMORY_TYPES = {"lexical", "paraphrase", "crosslingual", "temporal"}
DIFFICULTIES = {"easy", "medium", "hard"}
HAN = re.compile(r"[\u4e00-\u9fff]")


def chat_files():
    return sorted(DATA.glob("chats_*.json"))


def load(path: Path):
    return json.loads(path.read_text(encoding="utf-8"))


def test_question_counts_and_languages():
    chats = [load(p) for p in chat_files()]
    memories = load(DATA / "memories.json")
    chat_questions = [q for d in chats for q in d["questions"]]
    memory_questions = [q for b in memories["users"] for q in b["questions"]]
    assert len(chats) >= 8
    assert len(chat_questions) >= 200
    assert len(memory_questions) >= 100
    assert len(chat_questions) + len(memory_questions) >= 300
    for questions in (chat_questions, memory_questions):
        langs = Counter(q["lang"] for q in questions)
        assert set(langs) == {"en", "zh"}, langs
        assert min(langs.values()) >= 20, langs
    ids = [q["id"] for q in chat_questions + memory_questions]
    assert len(ids) == len(set(ids))


@pytest.mark.parametrize("path", chat_files(), ids=lambda p: p.stem)
def test_chat_file(path):
    data = load(path)
    assert re.fullmatch(r"[a-z0-9_]+", data["user"]) and path.stem == f"chats_{data['user']}"
    assert data["lang"] in {"en", "zh", "mixed"}
    assert 5 <= len(data["threads"]) <= 15
    for thread in data["threads"]:
        assert thread["title"] and re.fullmatch(r"\d{4}-\d{2}-\d{2}", thread["date"])
        assert 10 <= len(thread["turns"]) <= 40
        assert all(isinstance(turn, str) and turn.strip() for turn in thread["turns"])
    for question in data["questions"]:
        assert question["id"].startswith(f"{data['user']}-")
        assert question["query"].strip()
        assert question["type"] in CHAT_TYPES and question["difficulty"] in DIFFICULTIES
        assert question["lang"] == ("zh" if HAN.search(question["query"]) else "en"), question["id"]
        assert question["answers"], question["id"]
        found = []
        for thread_index, turn_index in question["answers"]:
            assert 0 <= thread_index < len(data["threads"]), question["id"]
            assert 0 <= turn_index < len(data["threads"][thread_index]["turns"]), question["id"]
            found.append(data["threads"][thread_index]["turns"][turn_index])
        # Each evidence snippet is quoted from one of the answer turns.
        for snippet in question["evidence"]:
            assert any(snippet in turn for turn in found), (question["id"], snippet)


def test_memories_file():
    data = load(DATA / "memories.json")
    users = [b["user"] for b in data["users"]]
    sessions = [b["session_id"] for b in data["users"]]
    assert len(set(users)) == len(users) and len(set(sessions)) == len(sessions)
    assert all(re.fullmatch(r"milky:private:\d+", s) for s in sessions)
    memory_ids = [m["id"] for b in data["users"] for m in b["memories"]]
    assert len(set(memory_ids)) == len(memory_ids)
    kinds = Counter()
    for block in data["users"]:
        own = {m["id"] for m in block["memories"]}
        for memory in block["memories"]:
            assert memory["kind"] in IDENTITY_KINDS and memory["content"].strip()
            kinds["chat" if memory["kind"] in CHAT_SCOPED_KINDS else "global"] += 1
        for question in block["questions"]:
            assert question["id"].startswith(f"{block['user']}-")
            assert question["type"] in MEMORY_TYPES and question["difficulty"] in DIFFICULTIES
            assert question["lang"] == ("zh" if HAN.search(question["query"]) else "en"), question["id"]
            assert question["answers"] and set(question["answers"]) <= own, question["id"]
    # Both scopes of the scoped store get items.
    assert kinds["chat"] and kinds["global"]
