"""Writes of the memory home (docs/home.md): correct and forget an item of any source, forget
a selection, forget everything of a source (or all of them) after a typed confirmation, and
import memories from an export.

Every deletion goes through ``memory_app.memories.services`` (the write rule, older versions
along, search documents, postings and vectors with them); the notes file through the
workspace service (its lock and publish path).

One module per operation: ``item`` (one item), ``forget`` (a selection, a source, everything),
``import_file`` (an export file read and checked) and ``importing`` (writing it).
"""

from memory_app.home.services.forget import (
    CONFIRM_WORD,
    MAX_SELECTED,
    ForgetReport,
    home_forget_selected,
    home_forget_source,
)
from memory_app.home.services.import_file import IMPORTED_KEYS, MAX_IMPORT_BYTES, MAX_IMPORT_ITEMS, import_parse
from memory_app.home.services.importing import (
    APPLIED,
    NOTES_CONFLICT,
    NOTES_IDENTICAL,
    NOTES_WRITTEN,
    UNCHANGED,
    ImportReport,
    home_import,
)
from memory_app.home.services.item import home_item_change, home_item_correct, home_item_forget

__all__ = [
    "APPLIED",
    "CONFIRM_WORD",
    "IMPORTED_KEYS",
    "MAX_IMPORT_BYTES",
    "MAX_IMPORT_ITEMS",
    "MAX_SELECTED",
    "NOTES_CONFLICT",
    "NOTES_IDENTICAL",
    "NOTES_WRITTEN",
    "UNCHANGED",
    "ForgetReport",
    "ImportReport",
    "home_forget_selected",
    "home_forget_source",
    "home_import",
    "home_item_change",
    "home_item_correct",
    "home_item_forget",
    "import_parse",
]
