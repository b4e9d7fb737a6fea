"""Structure of the long-dialogue evaluation set (bench/data/dialogue/), not its scores: it is
what bench/dialogue_gen.py writes, it has the size and kinds issue 27 asks for, every question's
evidence is a turn that exists, and people are addressed by name only by the other side."""

import importlib.util
import json
import random
from collections import Counter
from pathlib import Path

BENCH = Path(__file__).resolve().parents[3] / "bench"
DATA = BENCH / "data" / "dialogue"


def generator():
    spec = importlib.util.spec_from_file_location("dialogue_gen", BENCH / "dialogue_gen.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def conversations():
    return [json.loads(path.read_text(encoding="utf-8")) for path in sorted(DATA.glob("conv_*.json"))]


def test_the_files_are_what_the_generator_writes():
    gen = generator()
    rng = random.Random(gen.SEED)
    stored = conversations()
    assert len(stored) == len(gen.CONVERSATIONS)
    for index, (lang, a, b, split) in enumerate(gen.CONVERSATIONS):
        assert gen.conversation(index, lang, a, b, split, rng) == stored[index]


def test_size_kinds_languages_and_evidence():
    data = conversations()
    assert len(data) >= 6 and sum(d["lang"] == "zh" for d in data) >= 2
    kinds = Counter()
    for d in data:
        turns = {t["id"]: t for s in d["sessions"] for t in s["turns"]}
        assert len(d["sessions"]) >= 15 and len(turns) >= 300
        assert len({s["date"] for s in d["sessions"]}) == len(d["sessions"])
        assert {t["speaker"] for t in turns.values()} == {d["user"], d["other"]}
        for q in d["questions"]:
            kinds[q["kind"]] += 1
            assert q["evidence"] and all(e in turns for e in q["evidence"])
    assert sum(kinds.values()) >= 800 and set(kinds) == {"single", "multi", "temporal", "open"}
    assert {d["split"] for d in data} == {"dev", "heldout"}


def test_people_are_addressed_by_name_by_the_other_side_only():
    for d in conversations():
        turns = [t for s in d["sessions"] for t in s["turns"]]
        for person in (d["user"], d["other"]):
            addressing = [t for t in turns if t["text"].startswith((f"{person},", f"{person}，", f"{person}！"))]
            addressing += [t for t in turns if t["text"].startswith(f"Hey {person}!")]
            assert len(addressing) >= 20, (d["id"], person)
            assert all(t["speaker"] != person for t in addressing)
