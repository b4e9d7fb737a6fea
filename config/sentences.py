"""Sentences put together for a page: each part is a whole sentence of its language (with its
own full stop, translated as one message), joined the way that language writes: with a space
between sentences in English, with none in Chinese ("它已暂停。你更正了它。")."""

from django.utils.translation import get_language

# Languages written without spaces between sentences.
UNSPACED_LANGUAGES = ("zh", "ja")


def join_sentences(*parts: str) -> str:
    """The non-empty ``parts``, each a whole sentence, as one text in the active language."""
    language = (get_language() or "").lower()
    separator = "" if language.startswith(UNSPACED_LANGUAGES) else " "
    return separator.join(part.strip() for part in parts if part and part.strip())
