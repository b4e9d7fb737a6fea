"""The queries a filtered search is calibrated against (docs/search.md, "Nothing matches"): questions
about nothing a person keeps in memory, in English and Chinese, and strings of no language,
embedded once per process and model (``background_queries``), and which language a query is
asked in (``is_chinese``)."""

import functools
import random
import string
import threading

import numpy as np

from memory_app.search.embeddings import CHINESE_CHARS, DTYPE, EmbeddingProvider, background_similarity

# Queries about nothing a person keeps in memory, in both languages, and strings of no language:
# what an unrelated query scores for a scope's items (``engine``'s floors, docs/search.md,
# "Nothing matches"). Not the evaluation's queries (bench/crosslang_gen.py): those are asked, these
# calibrate.
BACKGROUND_QUERIES = (
    "What is the distance between Mars and Venus?",
    "Which element has the symbol Fe?",
    "How are glaciers formed?",
    "Who composed the Brandenburg Concertos?",
    "What is the derivative of sine?",
    "When did the Roman Republic end?",
    "How does an electric motor work?",
    "What is the speed of light in a vacuum?",
    "How do I change the oil filter of a lawnmower?",
    "What is the largest desert on Earth?",
    "Who discovered penicillin-resistant bacteria first?",
    "How many sides does a dodecagon have?",
    "What is the GDP of Portugal?",
    "Explain the theory of plate tectonics.",
    "What does a quantum computer do?",
    "How do I install a printer driver?",
    "The committee approved the budget for the new bridge.",
    "Stock markets closed lower on Tuesday.",
    "火星和金星之间的距离是多少？",
    "铁的化学符号是什么？",
    "冰川是怎么形成的？",
    "勃兰登堡协奏曲是谁创作的？",
    "正弦函数的导数是什么？",
    "罗马共和国是什么时候结束的？",
    "电动机是怎么工作的？",
    "真空中的光速是多少？",
    "割草机的机油滤芯怎么换？",
    "地球上最大的沙漠是哪个？",
    "十二边形有几条边？",
    "葡萄牙的国内生产总值是多少？",
    "请解释板块构造理论。",
    "量子计算机能做什么？",
    "打印机驱动怎么安装？",
    "委员会批准了新桥的预算。",
    "周二股市收盘下跌。",
    "qzvrt blemf",
    "xokdap wuhrin",
    "lkjhgf poiuy",
    "mnbvcx",
    "tarovelin sukapo",
    "grendish folup",
    "vw9k2 zrq",
    "фывапр",
    "κλμνξ ορ",
    "ggggg hhhh",
    "prst kvnt",
    "zxq 嗝煢",
    "ploo vamberick",
)
BACKGROUND_GIBBERISH = 48
# Which of ``BACKGROUND_QUERIES`` are questions (asked, or "Explain …"): what a question must
# stand out from (``dense.STAND_OUT_QUANTILE``).
BACKGROUND_QUESTIONS = frozenset(
    text for text in BACKGROUND_QUERIES if text.endswith(("?", "？")) or text.startswith(("Explain", "请解释"))
)


def _gibberish(n: int) -> tuple[str, ...]:
    """``n`` strings of no language, always the same (seeded): syllables that make no word, runs of
    letters, letters of other scripts and rare Han characters. The e5 model places such a string
    near some documents more than others; each document's floor (``engine``) must be above what
    they score for it, or a pseudo-word lists it."""
    rng = random.Random(20261206)
    made = []
    for i in range(n):
        kind = i % 4
        if kind == 0:
            words = ["".join(rng.choice("bcdfghjklmnprstvwz") + rng.choice("aeiou") for _ in range(rng.randint(2, 4)))]
            made.append(
                " ".join(words * 1 + ["".join(rng.choice("bdgklmnprstv") + rng.choice("aeiou") for _ in range(3))])
            )
        elif kind == 1:
            made.append(
                " ".join(
                    "".join(rng.choice(string.ascii_lowercase) for _ in range(rng.randint(3, 8))) for _ in range(2)
                )
            )
        elif kind == 2:
            made.append(
                "".join(chr(rng.randint(0x0430, 0x044F)) for _ in range(5))
                + " "
                + "".join(chr(rng.randint(0x4E00, 0x9FA5)) for _ in range(2))
            )
        else:
            made.append(
                "".join(rng.choice("bcdfghjklmnprstvwz") + rng.choice("aeiou") for _ in range(rng.randint(3, 5)))
                + rng.choice(("", "n", "x", "th"))
            )
    return tuple(made)


_queries_lock = threading.Lock()
_queries: dict[tuple[str, bool], tuple[np.ndarray, np.ndarray, np.ndarray]] = {}


def background_queries(
    provider: EmbeddingProvider, *, across_languages: bool
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``BACKGROUND_QUERIES`` and ``BACKGROUND_GIBBERISH`` strings of no language embedded as
    queries (rows), each one's background similarity, and
    whether it is Chinese: once per process, model and kind of query vector."""
    key = (provider.model, across_languages)
    with _queries_lock:
        found = _queries.get(key)
    if found is None:
        texts = BACKGROUND_QUERIES + _gibberish(BACKGROUND_GIBBERISH)
        matrix = np.stack([provider.embed_query(text, across_languages=across_languages) for text in texts]).astype(
            DTYPE
        )
        chinese = np.array([is_chinese(text) for text in texts])
        found = (matrix, background_similarity(provider, matrix), chinese)
        with _queries_lock:
            _queries[key] = found
    return found


@functools.cache
def asked_rows() -> np.ndarray:
    """Which rows of ``background_queries`` are questions (``BACKGROUND_QUESTIONS``); read-only."""
    rows = np.array([text in BACKGROUND_QUESTIONS for text in BACKGROUND_QUERIES] + [False] * BACKGROUND_GIBBERISH)
    rows.setflags(write=False)
    return rows


def is_chinese(text: str) -> bool:
    """Whether a query is asked in Chinese: more Han characters than Latin letters."""
    han = len(CHINESE_CHARS.findall(text))
    return han > 0 and han >= sum(ch.isascii() and ch.isalpha() for ch in text)
