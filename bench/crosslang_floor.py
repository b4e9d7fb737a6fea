"""The floors of the searches that filter, measured on the set of bench/crosslang_gen.py by meaning alone.

    .venv/bin/python bench/crosslang_floor.py [--split dev|heldout|all]

For each user of the split, every memory and notes line is embedded as a document, every question,
nonsense query and unrelated question as a query (``across_languages`` as the lists and the home
take it, and without, as ``/api/memory/search`` does; each followed by its ``lexicon.translate``
words or not), and for each way of setting the floor (``engine``'s background quantile and margin,
one floor per scope or one per language pair) it prints: the share of questions whose answer is
above the floor (across languages, within one) and the share of nonsense and unrelated queries
with nothing above it. The lists' and the home's figures then come from bench/crosslang_eval.py.
"""

import argparse
import json
import os
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.settings")

import django  # noqa: E402

django.setup()

from memory_app.search import lexicon  # noqa: E402
from memory_app.search.background import background_queries, is_chinese  # noqa: E402
from memory_app.search.embeddings import (  # noqa: E402
    E5Embedding,
    background_similarity,
    language_direction,
)

DATA = ROOT / "bench" / "data" / "crosslang" / "set.json"
ACROSS: tuple = (True, False)
TRANSLATE: tuple = (False, True)
PLACES = (True, False, "doc")
QUANTILES = (0.5, 0.75, 0.9, 1.0)
MARGINS = (-0.02, 0.0, 0.02)  # a floor per language pair of the scope, one per scope, one per document


def thresholds(docs, provider, across, chinese_query, quantile, margin, per_pair):
    queries, background, asked_chinese = background_queries(provider, across_languages=across)
    doc_chinese = docs @ language_direction(provider) > 0
    relative = docs @ queries.T - background
    if per_pair == "doc":  # each document's own: what the background queries score for it
        same = relative[:, asked_chinese == chinese_query]
        return np.maximum(provider.match_floor, np.quantile(same, quantile, axis=1) + margin)
    out = np.zeros(len(docs))
    for group in (0, 1):
        rows = relative[doc_chinese == bool(group)] if per_pair else relative
        if not len(rows):
            continue
        best = rows.max(axis=0)
        values = best[asked_chinese == chinese_query] if per_pair else best
        out[doc_chinese == bool(group)] = max(provider.match_floor, float(np.quantile(values, quantile)) + margin)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--split", choices=("dev", "heldout", "all"), default="dev")
    parser.add_argument("--across", choices=("yes", "no", "both"), default="both")
    parser.add_argument("--translation", choices=("in", "out", "both"), default="both")
    parser.add_argument("--places", default="pair,scope,doc", help="floors per language pair, scope or document")
    parser.add_argument("--quantiles", default="0.5,0.75,0.9,1.0")
    parser.add_argument("--margins", default="-0.02,0,0.02")
    args = parser.parse_args()
    global ACROSS, PLACES, QUANTILES, MARGINS  # noqa: PLW0603 - the grid's axes
    PLACES = tuple({"pair": True, "scope": False, "doc": "doc"}[p] for p in args.places.split(","))
    QUANTILES = tuple(float(q) for q in args.quantiles.split(","))
    MARGINS = tuple(float(m) for m in args.margins.split(","))
    global ACROSS, TRANSLATE  # noqa: PLW0603 - the grid's axes
    ACROSS = {"yes": (True,), "no": (False,), "both": (True, False)}[args.across]
    TRANSLATE = {"in": (True,), "out": (False,), "both": (False, True)}[args.translation]
    provider = E5Embedding()
    data = json.loads(DATA.read_text(encoding="utf-8"))
    users = [u for u in data["users"] if args.split == "all" or u["split"] == args.split]
    junk = [(q["q"], "nonsense") for q in data["nonsense"]] + [(q["q"], "unrelated") for q in data["unrelated"]]
    settings_grid = [(q, m, pair) for pair in PLACES for q in QUANTILES for m in MARGINS]
    for across in ACROSS:
        for translate in TRANSLATE:
            counts = {
                key: np.zeros(4) for key in settings_grid
            }  # across found, same found, nonsense empty, unrelated empty
            totals = np.zeros(4)

            def vector(text, across=across, translate=translate):
                extra = lexicon.translate(text) if translate else ""
                return provider.embed_query(f"{text} {extra}".strip(), across_languages=across)

            for n, user in enumerate(users):
                texts = [m["content"] for m in user["memories"]] + [line.lstrip("- ") for line in user["notes"]]
                keys = [m["key"] for m in user["memories"]] + ["note"] * len(user["notes"])
                docs = provider.embed(texts)
                asked = [(q, "q") for q in user["questions"]] + [
                    ({"q": q}, kind) for i, (q, kind) in enumerate(junk) if i % len(users) == n
                ]
                for question, kind in asked:
                    v = vector(question["q"])
                    relative = docs @ v
                    base = float(background_similarity(provider, v))
                    chinese = is_chinese(question["q"])
                    slot = (0 if question.get("cross") else 1) if kind == "q" else (2 if kind == "nonsense" else 3)
                    totals[slot] += 1
                    for key in settings_grid:
                        floor = base + thresholds(docs, provider, across, chinese, *key)
                        above = relative > floor
                        if kind == "q":
                            counts[key][slot] += bool(above[keys.index(question["answer"])])
                        else:
                            counts[key][slot] += not above.any()
            print(f"\nacross_languages={across} translation={'in' if translate else 'out'} ({args.split})")
            print("quantile margin per-pair | answer above: across  same | empty: nonsense unrelated")
            for key, c in counts.items():
                share = c / np.maximum(totals, 1)
                print(
                    f"{key[0]:8} {key[1]:6} {key[2]!s:8} | {share[0]:6.3f} {share[1]:6.3f} | {share[2]:6.3f} {share[3]:6.3f}"
                )


if __name__ == "__main__":
    main()
