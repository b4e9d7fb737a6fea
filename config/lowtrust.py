"""Low-trust framing: the one place that decides how stored data is shown to an agent.

Every block of data that reaches an agent (the notes file, the identity block, the scoped
section, the history tools' output) is framed by ``low_trust_block`` or passed through
``neutralize_low_trust``. Either way the data cannot produce a delimiter of any of these blocks:
each look-alike of a delimiter inside the data is replaced by ``DELIMITER_REPLACEMENT``, so a
stored text cannot close its block early and continue as if it were instructions
(docs/runs.md, Low-trust blocks).

A look-alike is matched on a folded view of the text: compatibility forms (NFKD, so full-width
``＜／identity_memory＞`` is ``</identity_memory>``), combining marks and invisible format
characters (zero-width space/joiners, word joiner, BOM, bidi controls) dropped, case folded, a
few bracket, slash and letter look-alikes (``‹ 〈 ⟨ « ≪ ⁄ ∕``, Cyrillic ``у`` …) mapped to ASCII,
and free spacing around and inside the delimiter's words. Only the matched span of the original text is replaced; the
rest stays as written, and stored data is never changed (this runs at output time).
"""

import re
import threading
import unicodedata
from dataclasses import dataclass

__all__ = [
    "DELIMITER_REPLACEMENT",
    "IDENTITY_FRAME",
    "MEMORY_FILE_FRAME",
    "SCOPED_FRAME",
    "LowTrustFrame",
    "low_trust_block",
    "neutralize_low_trust",
]


@dataclass(frozen=True)
class LowTrustFrame:
    begin: str
    end: str


MEMORY_FILE_FRAME = LowTrustFrame(begin="<<<MEMORY.md (data)>>>", end="<<<end of MEMORY.md>>>")
IDENTITY_FRAME = LowTrustFrame(begin='<identity_memory trust="low">', end="</identity_memory>")
SCOPED_FRAME = LowTrustFrame(begin="<scoped-memory>", end="</scoped-memory>")

DELIMITER_REPLACEMENT = "[marker removed]"

# Characters a reader (or a model) takes for an angle bracket or a slash, beyond what NFKD
# already folds (full-width and small forms).
_LOOKALIKES = {
    **dict.fromkeys("‹〈⟨❮❬❰⧼˂ᐸ", "<"),
    **dict.fromkeys("«≪《⟪", "<<"),
    **dict.fromkeys("›〉⟩❯❭❱⧽˃ᐳ", ">"),
    **dict.fromkeys("»≫》⟫", ">>"),
    **dict.fromkeys("⁄∕⧸╱", "/"),
    # Cyrillic and Greek letters (case-folded) that look like the Latin letters of the delimiters.
    **dict(zip("аеорсуіјѕԁмтıιοεμτρυν", "aeopcyijsdmtiioemtpyn", strict=True)),
}
# Format characters (zero-width space and joiners, word joiner, BOM, bidi controls, soft
# hyphen) and combining marks are invisible or decorate a letter: they are ignored.
_IGNORED = frozenset({"Cf", "Mn", "Me"})


# Quantifiers are possessive and runs of brackets are matched from their first bracket only, so
# a long run of '<' or of spaces costs linear time, not quadratic.
def _loose(word: str) -> str:
    """``word`` with any spacing between its letters."""
    return r"\s*+".join(re.escape(char) for char in word)


_SEP = r"[\s_\-.:]*+"  # between the words of a tag name: identity_memory, identity-memory, identity memory


def _words(*words: str) -> str:
    return _SEP.join(_loose(word) for word in words)


_MEMORY = rf"{_loose('memor')}\s*+(?:y|{_loose('ies')})"
_MEMORY_MD = rf"{_MEMORY}\s*+\.\s*+{_loose('md')}"
_TAG_NAMES = rf"(?:{_words('identity')}|{_words('scoped')}){_SEP}{_MEMORY}"
_LOOKALIKE_RE = re.compile(
    "|".join(
        [
            # <identity_memory …>, </identity_memory>, < / Identity-Memory >, <scoped-memory>, …
            # (attributes up to a '>' on the same line; an unclosed opener alone)
            rf"<\s*+[/\\]?\s*+{_TAG_NAMES}(?:[^<>\n]{{0,200}}>)?",
            # /identity_memory> with its '<' missing or disguised
            rf"[/\\]\s*+{_TAG_NAMES}\s*+>",
            # <<<MEMORY.md (data)>>>, <<<end of MEMORY.md>>>, <end of memory.md>, <<< END OF MEMORY >>>
            rf"(?<!<)<++[^<>\n]{{0,60}}?{_MEMORY_MD}(?:[^<>\n]{{0,60}}?>++)?",
            rf"(?<!<)<<++[^<>\n]{{0,60}}?{_MEMORY}(?:[^<>\n]{{0,60}}?>++)?",
            # end of MEMORY.md>>> with its '<<<' missing or disguised
            rf"{_MEMORY_MD}[^<>\n]{{0,20}}?>++",
            rf"{_MEMORY}[^<>\n]{{0,20}}?>>++",
        ]
    )
)


_FOLD_CACHE: dict[str, str] = {}
_FOLD_CACHE_MAX = 65536


def _fold_char(char: str) -> str:
    folded = _FOLD_CACHE.get(char)
    if folded is None:
        parts = (part for part in unicodedata.normalize("NFKD", char) if unicodedata.category(part) not in _IGNORED)
        folded = "".join(_LOOKALIKES.get(c, c) for c in "".join(parts).casefold())
        with _LEARNING:
            if len(_FOLD_CACHE) < _FOLD_CACHE_MAX and char not in _FOLD_CACHE:
                # The tables first: a character in the cache is one the tables know.
                if len(folded) != 1:
                    _UNEVEN.add(char)
                elif folded != char:
                    _EVEN_TABLE[ord(char)] = folded
                _FOLD_CACHE[char] = folded
    return folded


# What ``_fold_char`` learned, in the shapes that let ``str.translate`` and one regex fold a
# whole text at C speed: characters folding to one other character (a translate table), and
# characters folding to none or several (their positions shift the folded view).
_LEARNING = threading.Lock()
_EVEN_TABLE: dict[int, str] = {}
_UNEVEN: set[str] = set()
_UNEVEN_RE: dict[int, re.Pattern | None] = {0: None}  # one entry: size of _UNEVEN → its class


def _uneven_pattern() -> re.Pattern | None:
    pattern = _UNEVEN_RE.get(len(_UNEVEN), False)
    if pattern is False:
        with _LEARNING:
            chars = sorted(_UNEVEN)
            pattern = re.compile("[" + "".join(re.escape(c) for c in chars) + "]") if chars else None
            _UNEVEN_RE.clear()
            _UNEVEN_RE[len(chars)] = pattern
    return pattern


def _folded(text: str) -> tuple[str, list[int] | None]:
    """The folded view of ``text`` and, for each of its characters, the index of the original
    character it came from (None when the two are aligned one to one)."""
    if text.isascii():
        return text.lower(), None
    for char in set(text).difference(_FOLD_CACHE):
        _fold_char(char)
    if len(_FOLD_CACHE) >= _FOLD_CACHE_MAX and not set(text).issubset(_FOLD_CACHE):
        return _folded_by_char(text)  # a character the tables could not learn: one by one
    pattern = _uneven_pattern()
    if pattern is None or pattern.search(text) is None:
        return text.translate(_EVEN_TABLE), None
    parts, origin, position = [], [], 0
    for match in pattern.finditer(text):
        index = match.start()
        parts.append(text[position:index].translate(_EVEN_TABLE))
        origin.extend(range(position, index))
        folded = _FOLD_CACHE[text[index]]
        parts.append(folded)
        origin.extend([index] * len(folded))
        position = index + 1
    parts.append(text[position:].translate(_EVEN_TABLE))
    origin.extend(range(position, len(text)))
    return "".join(parts), origin


def _folded_by_char(text: str) -> tuple[str, list[int] | None]:
    """``_folded`` one character at a time (the reference the tables reproduce)."""
    parts = [_fold_char(char) for char in text]
    folded = "".join(parts)
    if len(folded) == len(text) and all(len(part) == 1 for part in parts):
        return folded, None
    origin: list[int] = []
    for index, part in enumerate(parts):
        origin.extend([index] * len(part))
    return folded, origin


def neutralize_low_trust(text: str) -> str:
    """``text`` with every look-alike of a low-trust block delimiter replaced by
    ``DELIMITER_REPLACEMENT``; everything else unchanged. The result contains no look-alike,
    so a prefix of it contains none either (callers may cut it)."""
    # A replacement can bring two remote parts of a look-alike closer together; repeat until
    # nothing matches. Each pass removes brackets or slashes, so this ends.
    while True:
        replaced = _replace_lookalikes(text)
        if replaced == text:
            return text
        text = replaced


def _replace_lookalikes(text: str) -> str:
    if not text:
        return text
    folded, origin = _folded(text)
    spans = [match.span() for match in _LOOKALIKE_RE.finditer(folded)]
    if not spans:
        return text
    if origin is not None:
        spans = [(origin[start], origin[end - 1] + 1) for start, end in spans]
    parts, position = [], 0
    for start, end in spans:
        # Two matches can begin inside one character that folds to several ('≪' is '<<').
        begin = max(start, position)
        parts.append(text[position:begin])
        if end > begin:
            parts.append(DELIMITER_REPLACEMENT)
        position = max(position, end)
    parts.append(text[position:])
    return "".join(parts)


def low_trust_block(frame: LowTrustFrame, content: str, *, header: str = "") -> str:
    """``header`` (trusted text saying the block is data), then ``content`` between the frame's
    delimiters, with every delimiter look-alike inside ``content`` neutralized."""
    lines = [header] if header else []
    lines += [frame.begin, neutralize_low_trust(content), frame.end]
    return "\n".join(lines)
