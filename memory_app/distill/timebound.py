"""Time-bounded statements (docs/auto-memory.md, "Expiry"): "I'm in Lisbon this week", "the
staging freeze lasts until Friday", "这个月我在上海出差", "下个月之前" … are true for a while;
``expiry_for`` finds the phrase that bounds one and the moment it stops being true, relative
to when it was said, in the speaker's time zone.

A few trigger patterns only find the candidate phrase and say which end of it counts ("until
Friday": the end of Friday; "before next month": its start). What the phrase means as a date
is ``dateparser``'s answer (English and Chinese); a phrase it cannot read sets nothing, so a
trigger word in a timeless statement ("never deploy until the tests pass") sets no expiry.
``dateparser`` takes about a second and ~14 MB to load with its English and Chinese data, so it is loaded on first
use (``bench/timebound_bench.py`` prints the figures).
"""

import dataclasses
import functools
import re
from dataclasses import dataclass
from datetime import datetime, timedelta, tzinfo
from typing import Any

from config.instants import OutOfRange, in_utc
from memory_app.distill.extraction import Candidate

MAX_PHRASE_CHARS = 40
MAX_TEXT_CHARS = 2000
END, START = "end", "start"
DURATION = "duration"  # "for the next two months": the end of the day that far ahead


@dataclass(frozen=True)
class Expiry:
    expires_at: datetime  # aware
    phrase: str  # the words that set it, as written


# --- finding the phrase ----------------------------------------------------------------------
_STOP = r"(?=[,.;!?，。；！？]|\s+(?:and|but|so|then|when|while|because)\b|$)"
_EN_PERIOD = r"(?:this|next|the coming)\s+(?:week|weekend|month|year|spring|summer|autumn|fall|winter)"
_EN_DAYS = r"(?:today|tonight|tomorrow)"
_NUMBER = r"(?:\d+|a|an|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|a few|a couple of)"

# (pattern, which end counts); group ``x`` is what dateparser reads.
_TRIGGERS: list[tuple[re.Pattern[str], str]] = [
    (
        re.compile(
            rf"\b(?:until|till|til|through|thru)\s+(?:the\s+end\s+of\s+)?(?P<x>[^,.;!?，。；！？]{{1,40}}?){_STOP}",
            re.I,
        ),
        END,
    ),
    (re.compile(rf"\bbefore\s+(?P<x>{_EN_PERIOD}|{_EN_DAYS}|[^,.;!?，。；！？]{{1,40}}?){_STOP}", re.I), START),
    (
        re.compile(rf"\bfor\s+(?:the\s+)?(?:next|coming)\s+(?P<x>{_NUMBER}\s+(?:days?|weeks?|months?|years?))\b", re.I),
        DURATION,
    ),
    (re.compile(rf"\bfor\s+(?P<x>{_NUMBER}\s+(?:more\s+)?(?:days?|weeks?|months?|years?))\b", re.I), DURATION),
    (re.compile(rf"\b(?P<x>{_EN_PERIOD}|{_EN_DAYS})\b", re.I), END),
    (re.compile(r"\bend\s+of\s+(?P<x>(?:this|next|the)\s+(?:week|month|year))\b", re.I), END),
    # Chinese: 到周五为止, 截至月底, 下个月之前, 未来两个月, 这个月, 今天 …
    (re.compile(r"(?:一直到|直到|到|截至|截止到?)(?P<x>[^，。；！？,.\s]{1,12}?)(?:为止|结束)"), END),
    (re.compile(r"(?:截至|截止到?)(?P<x>[^，。；！？,.\s]{1,8})"), END),
    (re.compile(r"(?P<x>[^，。；！？,.\s]{1,10}?)(?:之前|以前)"), START),
    (
        re.compile(r"(?:接下来的?|未来的?|之后的?)(?P<x>[0-9一二两三四五六七八九十]+个?(?:天|周|星期|礼拜|月|年))"),
        DURATION,
    ),
    (re.compile(r"(?P<x>[0-9一二两三四五六七八九十]+个?(?:天|周|星期|礼拜|月|年))(?:内|之内|以内)"), DURATION),
    (
        re.compile(
            r"(?P<x>今天|今晚|明天|后天|这周末|这个周末|本周末|这周|本周|这个星期|这星期|这个礼拜|下周|下个星期|下星期"
            r"|这个月|本月|下个月|月底|今年|年底|明年|(?:今年|明年)?(?:春天|夏天|秋天|冬天))"
        ),
        END,
    ),
]

# Words dateparser does not read, as words it does (no date arithmetic here).
_ZH_WORDS = [
    ("这个周末", "周日"),
    ("这周末", "周日"),
    ("本周末", "周日"),
    ("这个星期", "本周"),
    ("这星期", "本周"),
    ("这个礼拜", "本周"),
    ("这周", "本周"),
    ("下个星期", "下周"),
    ("下星期", "下周"),
    ("礼拜", "周"),
    ("个星期", "周"),
    ("星期", "周"),
    ("这个月", "本月"),
    ("月底", "本月"),
    ("年底", "今年"),
    ("今晚", "今天"),
]
_ZH_DIGITS = {"一": 1, "二": 2, "两": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7, "八": 8, "九": 9, "十": 10}
_SEASON_END_MONTH = {
    "spring": "May",
    "summer": "August",
    "autumn": "November",
    "fall": "November",
    "winter": "February",
}
_ZH_SEASONS = {"春天": "spring", "夏天": "summer", "秋天": "autumn", "冬天": "winter"}
# "for five years" after these looks back ("I have worked here for five years"), not ahead.
_LOOKS_BACK = re.compile(r"\b(?:have|has|had|been|was|were|ago|last|since|used to)\b", re.I)
_THE_PERIOD = {"the week": "this week", "the month": "this month", "the year": "this year"}
_EN_NUMBERS = {"a": "1", "an": "1", "one": "1", "a few": "3", "a couple of": "2"}


def _zh_number(match: re.Match[str]) -> str:
    text = match.group(0)
    if text == "十":
        return "10"
    if "十" in text:  # 十二, 二十, 二十三
        tens, _, ones = text.partition("十")
        return str(_ZH_DIGITS.get(tens, 1) * 10 + _ZH_DIGITS.get(ones, 0))
    return str(_ZH_DIGITS[text])


def _readable(phrase: str) -> str:
    """The phrase in words dateparser reads: Chinese synonyms and numerals, "for the next two
    months" as "in 2 months", seasons as the month they end in."""
    text = phrase.strip().lower()
    text = re.sub(r"^(?:the\s+)?end\s+of\s+", "", text)
    text = _THE_PERIOD.get(text, text)
    for word, month in _ZH_SEASONS.items():
        if word in text:
            return f"{'next ' if '明年' in text else ''}{_SEASON_END_MONTH[month]}"
    for source, target in _ZH_WORDS:
        text = text.replace(source, target)
    text = re.sub(r"[一二两三四五六七八九十]+(?=个?(?:天|周|月|年))", _zh_number, text)
    text = re.sub(r"(\d+)个?周", r"\1周后", text) if re.fullmatch(r"\d+个?周(?:后)?", text) else text
    text = re.sub(r"^(\d+)个?(天|月|年)$", r"\1个\2后", text).replace("个天", "天").replace("个年", "年")
    season = re.fullmatch(r"(this|next|the coming)\s+(spring|summer|autumn|fall|winter)", text)
    if season:
        return _SEASON_END_MONTH[season.group(2)]
    if text in ("this weekend", "the coming weekend"):
        return "sunday"
    if text == "next weekend":
        return "sunday"  # then moved a week on by _next_weekend
    number = re.fullmatch(r"(a few|a couple of|a|an|one)\s+(?:more\s+)?(\w+)", text)
    if number:
        text = f"{_EN_NUMBERS[number.group(1)]} {number.group(2)}"
    text = re.sub(r"^(\d+|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve)\s+(?:more\s+)?", r"in \1 ", text)
    return text


@functools.lru_cache(maxsize=1)
def _parser_class() -> Any:  # dateparser's DateDataParser (an untyped package)
    # Loaded on first use: dateparser costs ~1 s and ~14 MB to load (bench/timebound_bench.py).
    from dateparser.date import DateDataParser  # noqa: PLC0415 (lazy: see above)

    return DateDataParser


def _parse(text: str, base: datetime) -> tuple[datetime | None, Any]:
    # (date, dateparser's period: "day", "month", …), or (None, None).
    parser = _parser_class()(
        languages=["en", "zh"],
        settings={"RELATIVE_BASE": base, "PREFER_DATES_FROM": "future", "RETURN_TIME_AS_PERIOD": True},
    )
    data = parser.get_date_data(text)
    return (data.date_obj, data.period) if data and data.date_obj else (None, None)


def _bound(value: datetime, period: str, which: str) -> datetime:
    """The end (23:59 of its last day) or the start (00:00 of its first day) of the period
    ``value`` falls in; an explicit time counts as it is."""
    if period == "time":
        return value
    if which == DURATION:
        period, which = "day", END
    day = value.replace(hour=0, minute=0, second=0, microsecond=0)
    if period == "week":
        first = day - timedelta(days=day.weekday())
        last = first + timedelta(days=6)
    elif period == "month":
        first = day.replace(day=1)
        last = (first + timedelta(days=32)).replace(day=1) - timedelta(days=1)
    elif period == "year":
        first, last = day.replace(month=1, day=1), day.replace(month=12, day=31)
    else:  # day, part_of_day
        first = last = day
    if which == START:
        return first
    return last.replace(hour=23, minute=59)


def expiry_for(text: str, *, now: datetime, zone: tzinfo) -> Expiry | None:
    """When the statement ``text``, said at ``now`` by someone in ``zone``, stops being true;
    None for a statement that names no time it is bounded by (or only a past one)."""
    text = (text or "")[:MAX_TEXT_CHARS]
    base = now.astimezone(zone).replace(tzinfo=None)
    for pattern, which in _TRIGGERS:
        if which == DURATION and _LOOKS_BACK.search(text):
            continue
        for match in pattern.finditer(text):
            phrase = match.group("x").strip()
            if not phrase or len(phrase) > MAX_PHRASE_CHARS:
                continue
            # "年底之前", "before the end of the month": the end is the bound, not the period's start.
            ends = which == START and ("底" in phrase or phrase.lower().startswith(("end of", "the end of")))
            try:
                found = _read(phrase, base=base, which=END if ends else which)
                if found is None:
                    continue
                expires_at = found.replace(tzinfo=zone) if found.tzinfo is None else found
                in_utc(expires_at)
            except (OverflowError, OutOfRange):  # "until December 9999": past what a date can be
                continue
            if expires_at <= now:
                return None  # bounded, but by a time already past when it was said
            return Expiry(expires_at=expires_at, phrase=match.group(0).strip())
    return None


def _read(phrase: str, *, base: datetime, which: str) -> datetime | None:
    """The bound of ``phrase`` (or of its longest ending that reads as a date, for Chinese,
    where the phrase is not separated from the words before it)."""
    tails = [phrase] if phrase.isascii() else [phrase[i:] for i in range(len(phrase))]
    for tail in tails:
        readable = _readable(tail)
        if len(readable) < 2 and not readable.isdigit():
            continue
        value, period = _parse(readable, base)
        if value is None:
            continue
        if readable == "sunday" and "next" in phrase.lower():
            value += timedelta(days=7)
        return _bound(value, period, which)
    return None


def with_expiry(candidates: list[Candidate], *, now: datetime, zone: tzinfo) -> list[Candidate]:
    """``candidates`` with ``expires_at`` and ``expiry_phrase`` set where the statement is
    time-bounded (said at ``now`` in ``zone``)."""
    out = []
    for candidate in candidates:
        found = expiry_for(candidate.content, now=now, zone=zone)
        out.append(
            dataclasses.replace(candidate, expires_at=found.expires_at, expiry_phrase=found.phrase[:100])
            if found
            else candidate
        )
    return out


def expiry_details(candidate: Candidate) -> dict:
    """What a log entry or a candidate record keeps of the expiry (empty when none was set)."""
    if candidate.expires_at is None:
        return {}
    return {"expiry": {"expires_at": candidate.expires_at.isoformat(), "phrase": candidate.expiry_phrase}}
