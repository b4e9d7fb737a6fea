"""The ranking of a dialogue's turns (a history search, docs/search.md): who speaks in a turn,
the speakers' and other names taken out of what the model embeds, the neighbouring turns (the
reply after a hit by words, the two-turn windows of the meaning ranking), the names out of the
words' coverage, and the preference for a named speaker's turns. Pure functions of the question
and the candidate rows (``threads.candidates`` loads them); the history search that uses them is
``threads.history``."""

import re
import unicodedata
from collections.abc import Mapping

from memory_app.search import engine
from memory_app.search.analysis import STOP_WORDS, normalize, query_terms, text_runs

NEXT_TURN_SOURCES = 20
NEXT_TURN_WEIGHT = 0.5
WINDOW_SOURCES = 20  # the best dense hits whose previous turn shares their rank
NAMES_OUT_OF_COVERAGE = True
SPEAKERS_OUT_OF_MEANING = True  # the meaning ranking embeds the question without the speakers it names
# The meaning ranking also embeds the question without the capitalised words inside a sentence
# that look like names in a hybrid search (``without_proper_names``): at most this many, else none.
PROPER_NAMES_OUT_OF_MEANING = 2
SPEAKER_WEIGHT = 0.5  # a named speaker's turns: score × (1 + this)
LEXICAL_WEIGHT = 1.0  # weight of the word ranking in the fusion (the meaning ranking's is 1)


def with_next_turns(
    ranked: list[tuple[str, float]], rows: dict[int, dict], coverage: dict[str, float] | None = None
) -> list[tuple[str, float]]:
    """Neighbouring-turn context for a search by words alone: the reply after each of the best
    hits (the next turn, when the other side wrote it) gets ``NEXT_TURN_WEIGHT`` of its score,
    since an answer ("In the morning, with breakfast.") follows the question that names its
    topic. Where the meaning ranking takes part it carries that context already (a message is
    embedded with the turn before it), and this share, on top, only pushed replies up
    (docs/search.md). ``rows`` hold each candidate's next turn (``candidate_loader``): no statement here."""
    if not NEXT_TURN_WEIGHT:
        return ranked
    scores = dict(ranked)
    for ref, score in ranked[:NEXT_TURN_SOURCES]:
        row = rows.get(int(ref))
        if row is not None and row["next_id"] is not None and row["next_role"] != row["role"]:
            key = str(row["next_id"])
            scores[key] = scores.get(key, 0.0) + NEXT_TURN_WEIGHT * score
            if coverage is not None:  # the reply counts as holding what its question held
                coverage[key] = max(coverage.get(key, 0.0), coverage.get(ref, 0.0))
    return sorted(scores.items(), key=lambda pair: -pair[1])


def with_previous_turns(ranked: list[tuple[str, float]], rows: dict[int, dict]) -> list[tuple[str, float]]:
    """Windows of neighbouring turns for the meaning ranking: a message is embedded together
    with the turn before it, so a dense hit is a match of that two-turn window, and the earlier
    turn of the window ranks just after it unless it already ranks higher: a fact said in one
    turn is also found through the reply that carries it as context. The earlier turn is the
    candidate whose next turn the hit is (``rows``, from ``candidate_loader``): no statement here; a
    window whose earlier turn is not among the candidates is left as it is."""
    if not WINDOW_SOURCES:
        return ranked
    scores = dict(ranked)
    previous = {row["next_id"]: row["id"] for row in rows.values() if row["next_id"] is not None}
    for ref, score in ranked[:WINDOW_SOURCES]:
        prev = previous.get(int(ref))
        if prev is None:
            continue
        key = str(prev)
        scores[key] = max(scores.get(key, float("-inf")), score - 1e-9)
    return sorted(scores.items(), key=lambda pair: -pair[1])


def speaker_names(query: str) -> set[str]:
    """Lower-cased words and CJK runs of the query, to find the names of speakers in it."""
    return {run for _, run in text_runs(query)}


def named(name: str, query: str, words: set[str]) -> bool:
    name = normalize(name).strip()
    if not name or len(name) > 100:
        return False
    parts = [run for _, run in text_runs(name)]
    if not parts:
        return False
    if all(is_cjk for is_cjk, _ in text_runs(name)):
        return name in normalize(query)
    # The whole name, or its first word ("Mia" for "Mia Chen") unless that is a common word
    # ("The Doctor" is not named by every question with "the").
    first = parts[0] if parts[0] not in STOP_WORDS and len(parts[0]) > 1 else None
    return all(part in words for part in parts) or first in words


def speaker(row: dict | None) -> str:
    """Who wrote a candidate row: its metadata's ``name``, else its ``speaker`` (the two keys chat
    and dialogue formats name a turn's speaker by); else the name its text starts with, as a
    transcript writes it ("Mia: …", ``written_speaker``); for the turns of the person whose
    history it is, without any, their display name (``own_name``); "" if unknown."""
    if row is None:
        return ""
    return metadata_speaker(row) or written_speaker(row.get("head") or "") or (row.get("own_name") or "")


# The name a transcript writes before a turn's text: up to three words, then a colon and a
# space (or a full-width colon).
_WRITTEN_SPEAKER = re.compile(r"([^\W\d_]+(?: [^\W\d_]+){0,2})(?:: |：)")


def written_speaker(text: str) -> str:
    """The speaker's name a turn's text starts with, "Mia: …", "Mia Chen: …", "小雨：…": words
    in title case (``title_case``), or two to four CJK characters, so "note: …", "TODO: …" or
    "I think: …" name nobody; "" if none."""
    match = _WRITTEN_SPEAKER.match(text)
    if match is None:
        return ""
    name = match.group(1)
    runs = list(text_runs(name))
    if all(title_case(word) for word in name.split()) or (len(runs) == 1 and runs[0][0] and 2 <= len(name) <= 4):
        return name
    return ""


def metadata_speaker(row: Mapping) -> str:
    """The speaker a turn's metadata names (the ``speaker`` column, ``speaker_sql``), or ""."""
    speaker = row.get("speaker")
    return speaker.strip() if isinstance(speaker, str) else ""


def without_speakers(query: str, names: frozenset[str]) -> str:
    """The question without the names of speakers it names (whole, or a name's first word;
    CJK names as a substring, as ``named`` finds them), for the meaning ranking: a person's
    own turns rarely hold their name, while the other side's turns that address them do, so
    the name pulls the question's vector toward the wrong turns (docs/search.md). The
    question itself if nothing would be left."""
    words = speaker_names(query)
    said = [name for name in sorted(names, key=len, reverse=True) if named(name, query, words)]
    if not said:
        return query
    out = query
    for name in said:
        if all(is_cjk for is_cjk, _ in text_runs(name)):
            out = re.sub(re.escape(unicodedata.normalize("NFKC", name.strip())), " ", out, flags=re.IGNORECASE)
            continue
        parts = [run for _, run in text_runs(name)]
        spelled = [r"[\W_]+".join(map(re.escape, parts)), re.escape(parts[0])]
        out = re.sub(rf"(?<![^\W_])(?:{'|'.join(spelled)})(?:['’]s)?(?![^\W_])", " ", out, flags=re.IGNORECASE)
    out = re.sub(r"\s+", " ", out).strip()
    return out if query_terms(out) else query


# A word after a word, a comma, a semicolon or a colon and a space (not at the start of a
# sentence, where every word is capitalised), with its possessive; a name if in title case.
_INNER_WORD = re.compile(r"(?<=[^\W_][ \t]|[,;:][ \t])([^\W\d_]+)(?:['’]s)?(?![^\W_])")


def title_case(word: str) -> bool:
    """Whether a word is in title case: "Mia", "Zoë", "Émile"; not "I", "LGBTQ", "PostgreSQL",
    "élan" or a CJK run."""
    return len(word) > 1 and word[0].isupper() and word[1:].islower()


def without_proper_names(query: str) -> str:
    """The question without the words that look like names (a word in title case inside a
    sentence, ``_INNER_WORD``), for the meaning ranking: the names of people the history does
    not know as speakers (a runtime that sends none), places, products. A small model's vector
    of a short question is mostly its name, and the turns that say the name (the other side's
    "Mia, that's huge!") outrank the answer, while the word ranking, which keeps the question
    whole, finds a rare name exactly. Only when there are at most
    ``PROPER_NAMES_OUT_OF_MEANING`` and they are under a third of the words: a question in title
    case keeps them, as does one with more such words (a language that capitalises its nouns
    often has). The question itself if nothing searchable would be left."""
    found = [match for match in _INNER_WORD.finditer(query) if title_case(match.group(1))]
    if not found or len(found) > PROPER_NAMES_OUT_OF_MEANING or 3 * len(found) > len(query.split()):
        return query
    out = query
    for match in reversed(found):
        out = out[: match.start()] + " " + out[match.end() :]
    out = re.sub(r"\s+", " ", out).strip()
    return out if query_terms(out) else query


def meaning_query(query: str, names: frozenset[str], mode: str) -> str:
    """What the meaning ranking of a search in ``mode`` embeds: the question without the
    speakers' names it holds (``without_speakers``), then, in ``hybrid`` (where the word
    ranking keeps them), without the other words that look like names."""
    out = without_speakers(query, names)
    return without_proper_names(out) if mode == "hybrid" else out


def speaker_aware(ranked: list[tuple[str, float]], rows: dict[int, dict], query: str) -> list[tuple[str, float]]:
    """A question that names a speaker favours that speaker's turns: their score raised by
    ``SPEAKER_WEIGHT`` times its size (times ``1 + SPEAKER_WEIGHT`` for a positive score). A
    turn's speaker is the ``name`` of its metadata (what a runtime sends for a two-person or group
    chat), else, for the user's turns, the user's display name."""
    if not SPEAKER_WEIGHT:
        return ranked
    words = speaker_names(query)
    is_named: dict[str, bool] = {}
    out = []
    for ref, score in ranked:
        who = speaker(rows.get(int(ref)))
        if who and who not in is_named:
            is_named[who] = named(who, query, words)
        # Scaled by its size, so a favour whatever the sign (a meaning score can be below 0).
        out.append((ref, score + abs(score) * SPEAKER_WEIGHT if who and is_named[who] else score))
    return sorted(out, key=lambda pair: -pair[1])


def names_out_of_coverage(rankings: engine.Rankings, rows: dict[int, dict], query: str) -> None:
    """A speaker's name in the question says whose turns to favour (``speaker_aware``), not a
    word the answer should hold: where no turn holds it, it leaves the idf mass the word
    ranking's coverage is measured against (else every turn would seem to miss the question's
    weightiest word, and the words would count for little in the fusion)."""
    if not NAMES_OUT_OF_COVERAGE or not rankings.coverage:
        return
    words = speaker_names(query)
    names = {speaker(row) for row in rows.values()} - {""}
    name_terms = {term for name in names if named(name, query, words) for term in query_terms(name)}
    dropped = sum(idf for term, idf in rankings.absent.items() if term and term in name_terms)
    total = rankings.absent.get("", 0.0)
    if dropped and total - dropped > 0:
        scale = total / (total - dropped)
        rankings.coverage = {ref: min(1.0, share * scale) for ref, share in rankings.coverage.items()}
