"""Chinese tokenization for the word index: character bigrams (what the engine uses) against a
dictionary segmenter (``jieba``, search mode), measured on the Chinese questions of the
retrieval evaluation set with the same BM25 (k1 1.2, b 0.75, the engine's coordination factor).

    .venv/bin/python -m pip install jieba==0.42.1   # only for this comparison
    .venv/bin/python bench/cjk_tokenizer_eval.py

Runs in memory (no database): per user, every chat turn (and every memory) is a document; each
Chinese question ranks them. Prints hit@1/5/10 and MRR@10 per tokenizer, and the tokenizing
time per document.
"""

import json
import math
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from memory_app.search.analysis import (  # noqa: E402
    STOP_WORDS,
    ZH_STOP_CHARS,
    query_terms,
    stem,
    term_counts,
    text_runs,
)

DATA = ROOT / "bench" / "data" / "retrieval"


def jieba_pieces(text: str):
    import jieba

    for is_cjk, run in text_runs(text):
        if is_cjk:
            for word in jieba.cut_for_search(run):
                if word and not set(word) <= ZH_STOP_CHARS:
                    yield word
        elif run not in STOP_WORDS and (len(run) >= 2 or run.isdigit()):
            yield stem(run)


def _jieba_extra(text: str):
    """jieba's words that bigrams do not already give: longer than two characters."""
    return ("w:" + piece for piece in jieba_pieces(text) if len(piece) > 2 and not piece.isascii())


TOKENIZERS = {
    "bigrams": (term_counts, query_terms),
    "jieba": (lambda t: Counter(jieba_pieces(t)), lambda q: list(dict.fromkeys(jieba_pieces(q)))),
    "bigrams+jieba": (
        lambda t: term_counts(t) + Counter(_jieba_extra(t)),
        lambda q: list(dict.fromkeys([*query_terms(q), *_jieba_extra(q)])),
    ),
}


def bm25_rank(docs: list[Counter], terms: list[str]) -> list[int]:
    n = len(docs)
    lengths = [sum(d.values()) for d in docs]
    avg = max(sum(lengths) / max(n, 1), 1.0)
    df = {t: sum(1 for d in docs if t in d) for t in terms}
    scores = []
    for i, doc in enumerate(docs):
        score, matched = 0.0, 0
        for t in terms:
            tf = doc.get(t, 0)
            if not tf:
                continue
            matched += 1
            idf = math.log(1 + (n - df[t] + 0.5) / (df[t] + 0.5))
            score += idf * tf * 2.2 / (tf + 1.2 * (0.25 + 0.75 * lengths[i] / avg))
        if matched:
            score *= 0.5 + 0.5 * matched / len(terms)
        scores.append(score)
    return [i for i in sorted(range(n), key=lambda i: -scores[i]) if scores[i] > 0]


def evaluate(name: str) -> dict:
    doc_fn, query_fn = TOKENIZERS[name]
    hits = {1: 0, 5: 0, 10: 0}
    rr, count, tok_time, tok_docs = 0.0, 0, 0.0, 0
    for path in sorted(DATA.glob("chats_*.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        keys, texts = [], []
        for t, thread in enumerate(data["threads"]):
            for i, turn in enumerate(thread["turns"]):
                keys.append((t, i))
                texts.append(turn)
        start = time.perf_counter()
        docs = [doc_fn(text) for text in texts]
        tok_time += time.perf_counter() - start
        tok_docs += len(docs)
        for question in data["questions"]:
            if question["lang"] != "zh":
                continue
            count += 1
            answers = {tuple(a) for a in question["answers"]}
            ranked = [keys[i] for i in bm25_rank(docs, query_fn(question["query"]))[:10]]
            first = next((r for r, key in enumerate(ranked, start=1) if key in answers), None)
            for k in hits:
                hits[k] += first is not None and first <= k
            rr += 1 / first if first else 0.0
    memories = json.loads((DATA / "memories.json").read_text(encoding="utf-8"))
    m_hits, m_count = 0, 0
    for user in memories["users"]:
        ids = [m["id"] for m in user["memories"]]
        docs = [doc_fn(m["content"]) for m in user["memories"]]
        for question in user["questions"]:
            if question["lang"] != "zh":
                continue
            m_count += 1
            ranked = [ids[i] for i in bm25_rank(docs, query_fn(question["query"]))[:5]]
            m_hits += bool(set(ranked) & set(question["answers"]))
    return {
        "chat_questions": count,
        "hit@1": hits[1] / count,
        "hit@5": hits[5] / count,
        "hit@10": hits[10] / count,
        "mrr@10": rr / count,
        "memory_questions": m_count,
        "memory_hit@5": m_hits / m_count,
        "ms_per_doc": 1000 * tok_time / max(tok_docs, 1),
    }


def main():
    print(f"{'tokenizer':14} {'n':>4} {'h@1':>6} {'h@5':>6} {'h@10':>6} {'MRR':>6} | {'mem n':>5} {'h@5':>6} | ms/doc")
    for name in TOKENIZERS:
        r = evaluate(name)
        print(
            f"{name:14} {r['chat_questions']:4d} {r['hit@1']:6.3f} {r['hit@5']:6.3f} {r['hit@10']:6.3f} "
            f"{r['mrr@10']:6.3f} | {r['memory_questions']:5d} {r['memory_hit@5']:6.3f} | {r['ms_per_doc']:.3f}"
        )


if __name__ == "__main__":
    main()
