"""Text analysis shared by every search: the one tokenizer for English and CJK text.

- Text is NFKC-normalised and lower-cased, then split into runs of CJK characters (Chinese,
  Japanese kana, Korean hangul) and runs of other word characters.
- Word runs: stop words and one-letter words (but not digits) are dropped; the rest are
  stemmed with the Snowball English stemmer ("decided", "decision" → "decid", "decis";
  "databases" → "databas").
- CJK runs: overlapping character bigrams; a one- or two-character run is a term by itself.
  Documents also index each character, so a one-character query (``咖``) finds ``咖啡``.
  Bigrams made only of Chinese function characters (and those characters alone) are dropped.

Documents and queries go through the same analysis (``term_counts``, ``query_terms``), so a query term matches a
document term exactly (the word index stores these terms).
"""

import functools
import re
import threading
import unicodedata
from collections import Counter
from collections.abc import Collection, Iterator

import snowballstemmer

CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af\U00020000-\U0002fa1f"
_RUNS = re.compile(rf"(?P<cjk>[{CJK}]+)|(?P<word>[^\W_{CJK}]+)")
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
_local = threading.local()
MAX_TERM_CHARS = 64  # longer "words" (hashes, URLs) are not terms


def normalize(text: str) -> str:
    return unicodedata.normalize("NFKC", text or "").lower()


def text_runs(text: str, *, runs: re.Pattern[str] = _RUNS) -> Iterator[tuple[bool, str]]:
    """``(is_cjk, run)`` pairs of the normalised text; ``runs`` has a ``cjk`` and a ``word`` group."""
    for match in runs.finditer(normalize(text)):
        yield (match.lastgroup == "cjk", match.group())


@functools.lru_cache(maxsize=65536)
def stem(word: str) -> str:
    """The Snowball English stem of a lower-cased word."""
    stemmer = getattr(_local, "stemmer", None)
    if stemmer is None:  # a stemmer object keeps state while it works: one per thread
        stemmer = _local.stemmer = snowballstemmer.stemmer("english")
    stemmed: str = stemmer.stemWord(word)  # snowballstemmer is untyped
    return stemmed


def _pieces(text: str, *, unigrams: bool = False) -> Iterator[str]:
    """Every term occurrence of ``text``, in order (duplicates kept). With ``unigrams`` (documents)
    each CJK character is a term too, so a one-character query ("咖") finds "咖啡"."""
    for is_cjk, run in text_runs(text):
        if is_cjk:
            if unigrams and len(run) > 1:
                yield from (char for char in run if char not in ZH_STOP_CHARS)
            if len(run) <= 2:
                yield run
                continue
            for i in range(len(run) - 1):
                piece = run[i : i + 2]
                if not set(piece) <= ZH_STOP_CHARS:
                    yield piece
        elif run not in STOP_WORDS and (len(run) >= 2 or run.isdigit()) and len(run) <= MAX_TERM_CHARS:
            yield stem(run)


def term_counts(text: str) -> Counter:
    """How often each term occurs in a document's text."""
    return Counter(_pieces(text, unigrams=True))


def query_terms(text: str, *, max_terms: int = MAX_QUERY_TERMS) -> list[str]:
    """The distinct search terms of ``text``, in order of first appearance, at most ``max_terms``
    (none for a query made only of stop words: "the of and" is not a search)."""
    terms: list[str] = []
    for piece in _pieces(text):
        if piece not in terms:
            terms.append(piece)
            if len(terms) == max_terms:
                break
    return terms


def match_spans(text: str, terms: Collection[str]) -> list[tuple[int, int]]:
    """``(start, end)`` character spans of ``text`` whose term is one of ``terms``: whole words
    for word terms, the bigram (or short run) for CJK terms. For highlighting."""
    wanted = set(terms)
    spans = []
    for match in _RUNS.finditer(text):
        run = normalize(match.group())
        if match.lastgroup == "cjk":
            for i in range(len(match.group())):
                if match.group()[i : i + 2].lower() in wanted or (len(run) <= 2 and run in wanted):
                    spans.append((match.start() + i, match.start() + min(i + 2, len(match.group()))))
        elif stem(run) in wanted:
            spans.append((match.start(), match.end()))
    merged: list[tuple[int, int]] = []
    for start, end in spans:
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(end, merged[-1][1]))
        else:
            merged.append((start, end))
    return merged
