"""Calibrate the similarity floor of an embedding model: a memory matches a query by meaning in a
search that filters when its similarity is at least ``match_floor`` above the query's
background similarity (``background_similarity``; ``match_floor`` of each provider in
memory_app/search/embeddings.py, applied by ``engine.dense_rank(floor=True)``).

    .venv/bin/python bench/similarity_floor.py [--provider e5|hashed] [--floor F]

On the memories of the retrieval evaluation set (bench/data/retrieval/memories.json: 143
memories of ten users, 121 questions naming the memories that answer them), for each floor:

- precision and recall of "similarity − background ≥ floor" as a test of relevance, over every (question,
  memory of the same user) pair — a pair is relevant when the memory answers the question;
- dense hit@1 and hit@5: the answer is ranked first / in the first five, among the memories at
  or above the floor (hit@k at floor 0 is today's ranking by meaning);
- how many of the nonsense queries (``NONSENSE``: strings no memory is about) still find a
  memory: a floor that lets them through makes a search filter that filters nothing.

Prints one line per floor and, with ``--floor``, the figures at that floor. The similarity is
the model's own, so the floor is per model. The retrieval evaluation (bench/retrieval_eval.py)
then measures the lists' hit@k with the floor chosen.
"""

import argparse
import json
import os
import random
import string
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.settings")

import django  # noqa: E402

django.setup()

from memory_app.search.embeddings import E5Embedding, HashedNgramEmbedding, background_similarity  # noqa: E402

DATA = ROOT / "bench" / "data" / "retrieval" / "memories.json"
NONSENSE_WORDS = ["xyzzy plugh", "qwpzx vbnmk", "zzzz", "asdfgh jkl", "foo bar baz qux", "lorem ipsum dolor"]


def nonsense(n: int = 60) -> list[str]:
    rng = random.Random(7)
    made = list(NONSENSE_WORDS)
    while len(made) < n:
        words = ["".join(rng.choice(string.ascii_lowercase) for _ in range(rng.randint(3, 8))) for _ in range(2)]
        made.append(" ".join(words))
    return made


def similarities(provider) -> tuple[list[tuple[np.ndarray, list[set]]], list[np.ndarray]]:
    """Per user: (question × memory similarities, the answer indexes of each question); and per
    user the nonsense × memory similarities."""
    data = json.loads(DATA.read_text(encoding="utf-8"))
    users, junk = [], []
    noise = nonsense()
    for user in data["users"]:
        ids = [m["id"] for m in user["memories"]]
        matrix = provider.embed([m["content"] for m in user["memories"]])
        questions = np.stack([provider.embed_query(q["query"], across_languages=True) for q in user["questions"]])
        answers = [{ids.index(a) for a in q["answers"]} for q in user["questions"]]
        users.append((questions @ matrix.T - background_similarity(provider, questions)[:, None], answers))
        noise_vectors = np.stack([provider.embed_query(q, across_languages=True) for q in noise])
        junk.append(noise_vectors @ matrix.T - background_similarity(provider, noise_vectors)[:, None])
    return users, junk


def at_floor(users, junk, floor: float) -> dict:
    tp = fp = fn = 0
    hit1 = hit5 = total = 0
    for sims, answers in users:
        for row, wanted in zip(sims, answers, strict=True):
            total += 1
            above = row >= floor
            relevant = np.zeros(len(row), dtype=bool)
            relevant[list(wanted)] = True
            tp += int((above & relevant).sum())
            fp += int((above & ~relevant).sum())
            fn += int((~above & relevant).sum())
            order = [i for i in np.argsort(-row, kind="stable") if above[i]]
            hit1 += bool(order[:1] and order[0] in wanted)
            hit5 += bool(set(order[:5]) & wanted)
    junk_hits = sum(int((sims >= floor).any(axis=1).sum()) for sims in junk)
    junk_total = sum(len(sims) for sims in junk)
    return {
        "floor": round(floor, 3),
        "precision": tp / (tp + fp) if tp + fp else 1.0,
        "recall": tp / (tp + fn) if tp + fn else 0.0,
        "hit@1": hit1 / total,
        "hit@5": hit5 / total,
        "nonsense_with_hits": f"{junk_hits}/{junk_total}",
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--provider", choices=("e5", "hashed"), default="e5")
    parser.add_argument("--floor", type=float, default=None)
    args = parser.parse_args()
    provider = E5Embedding() if args.provider == "e5" else HashedNgramEmbedding()
    users, junk = similarities(provider)
    print(f"{provider.model}: match_floor now {provider.match_floor}")
    print(f"{'floor':>6} {'precision':>9} {'recall':>6} {'hit@1':>6} {'hit@5':>6} nonsense-with-hits")
    floors = sorted(
        {*np.round(np.arange(-0.04, 0.4, 0.01), 2), provider.match_floor, *([] if args.floor is None else [args.floor])}
    )
    for floor in floors:
        row = at_floor(users, junk, float(floor))
        print(
            f"{row['floor']:>6.2f} {row['precision']:>9.3f} {row['recall']:>6.3f} "
            f"{row['hit@1']:>6.3f} {row['hit@5']:>6.3f} {row['nonsense_with_hits']}"
        )
    if args.floor is not None:
        print("at the floor:", at_floor(users, junk, args.floor))


if __name__ == "__main__":
    main()
