"""Text analysis shared by every search: the one tokenizer for English and CJK text.

- Text is NFKC-normalised and lower-cased, then split into runs of CJK characters (Chinese,
  Japanese kana, Korean hangul) and runs of other word characters.
- Word runs: stop words and one-letter words (but not digits) are dropped; the rest get a
  light suffix stemming that only ever *removes* a suffix, so a stem is always a prefix of
  the word it came from: a word term matches at the start of a word (``count_occurrences``), and
  a substring prefilter in SQL still finds every candidate.
- CJK runs: overlapping character bigrams; a one- or two-character run is a term by itself
  (so ``咖啡`` and ``咖`` work). Bigrams made only of Chinese function characters are dropped.
"""

import re
import unicodedata

CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af\U00020000-\U0002fa1f"
_RUNS = re.compile(rf"(?P<cjk>[{CJK}]+)|(?P<word>[^\W_{CJK}]+)")
_CJK_CHAR = re.compile(f"[{CJK}]")
MAX_QUERY_TERMS = 24

STOP_WORDS = frozenset(
    """a about above after again all also am an and any anything are as at be because been before
    being below between both but by can could did do does doing done down during each few for
    from further had has have having he her here hers him his how i if in into is it its itself
    just know me might more most must my no nor not now of off on once only or other our ours out
    over own please remember same shall she should so some something such tell than that the
    their theirs them then there these they this those through to too under until up us very was
    we were what when where which while who whom whose why will with would you your yours""".split()
)
# Chinese function characters: a bigram made only of these carries no topic.
ZH_STOP_CHARS = frozenset("的了是我你他她它们这那哪个吗呢吧啊在有和就都也要会对把被给让什么怎样为啥谁呀嘛")
# (suffix, shortest stem it may leave). "ing"/"ly"/"ed" need four letters left so that
# "string", "apply", "early" and "speed" stay whole; "es" only follows a sibilant
# ("boxes" → "box", but "notes" → "note" through "s").
_SUFFIXES = (
    ("ingly", 4),
    ("edly", 4),
    ("ing", 4),
    ("ies", 3),
    ("ied", 3),
    ("es", 3),
    ("ed", 4),
    ("ly", 4),
    ("s", 3),
)
_SIBILANT_ENDS = ("s", "x", "z", "ch", "sh")


def normalize(text: str) -> str:
    return unicodedata.normalize("NFKC", text or "").lower()


def text_runs(text: str, *, runs: re.Pattern = _RUNS):
    """``(is_cjk, run)`` pairs of the normalised text; ``runs`` has a ``cjk`` and a ``word`` group."""
    for match in runs.finditer(normalize(text)):
        yield (match.lastgroup == "cjk", match.group())


def starts_with_cjk(text: str) -> bool:
    return _CJK_CHAR.match(text) is not None


def count_occurrences(text: str, term: str) -> int:
    """How often ``term`` occurs in normalised ``text``: anywhere for a CJK term, at the start
    of a word for everything else ("cat" counts in "cats", not in "location")."""
    found = text.count(term)
    if not found or starts_with_cjk(term):
        return found
    count, start = 0, 0
    while (at := text.find(term, start)) != -1:
        before = text[at - 1] if at else " "
        if not before.isalnum() or starts_with_cjk(before):
            count += 1
        start = at + 1
    return count


def stem(word: str) -> str:
    """Strip one common English suffix; the stem is always a prefix of ``word``."""
    if word.endswith("ss"):
        return word
    for suffix, shortest in _SUFFIXES:
        if not word.endswith(suffix) or len(word) - len(suffix) < shortest:
            continue
        if suffix == "es" and not word[:-2].endswith(_SIBILANT_ENDS):
            continue  # "notes": strip only the "s"
        return word[: -len(suffix)]
    return word


def query_terms(text: str, *, max_terms: int = MAX_QUERY_TERMS) -> list[str]:
    """The distinct search terms of ``text``, in order of first appearance, at most ``max_terms``
    (none for a query made only of stop words: "the of and" is not a search)."""
    terms: list[str] = []
    for is_cjk, run in text_runs(text):
        if is_cjk:
            if len(run) <= 2:
                pieces = [run]
            else:
                pieces = [run[i : i + 2] for i in range(len(run) - 1)]
                pieces = [p for p in pieces if not set(p) <= ZH_STOP_CHARS]
        else:
            if run in STOP_WORDS or (len(run) < 2 and not run.isdigit()):
                continue
            pieces = [stem(run)]
        for piece in pieces:
            if piece not in terms:
                terms.append(piece)
    return terms[:max_terms]
