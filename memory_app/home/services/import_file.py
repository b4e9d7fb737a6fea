"""An export file read and checked before anything of it is written: the JSON rules, the
version, each item, the notes files, the settings and the profile fields."""

import json
from typing import cast

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import models
from django.utils import timezone
from django.utils.dateparse import parse_datetime
from django.utils.translation import gettext as _

from config.errors import DomainError, InvalidInput
from config.instants import OutOfRange, in_utc
from config.validation import (
    DuplicateKey,
    clean_text,
    json_nesting_depth,
    json_text_problem,
    unique_keys,
)
from identity_app.models import Profile
from memory_app.automemory import services as automemory_services
from memory_app.home.errors import ErrorCode
from memory_app.home.export import EXPORT_FORMAT, EXPORT_ITEM_KEYS, EXPORT_READABLE_VERSIONS
from memory_app.memories import services as memory_services
from memory_app.memories.models import (
    IDENTITY_KINDS,
    Status,
)
from memory_app.notes.workspace import WORKSPACE_FILES, validate_workspace_content

MAX_IMPORT_ITEMS = 1000
MAX_IMPORT_BYTES = 1024 * 1024
IMPORTED_KEYS = ("id", "origin", "created_at")
GLOBAL_SECTION = "global"  # memories.global: pre-isolation global items, read only by the operator's --legacy import
PROFILE_FIELDS = ("display_name", "timezone", "language", "preferences")


def import_error(section: str, index: int, message: str, code: str = "invalid_import") -> InvalidInput:
    return InvalidInput(f"memories.{section}[{index}]: {message}", code=code, details={"index": index})


def check_version(data) -> None:
    if not isinstance(data, dict) or data.get("format") != EXPORT_FORMAT:
        raise InvalidInput(
            _("Not an export of this service (format must be %(format)r).") % {"format": EXPORT_FORMAT},
            code=ErrorCode.INVALID_IMPORT,
        )
    version = data.get("version")
    if isinstance(version, bool) or version not in EXPORT_READABLE_VERSIONS:
        readable = " or ".join(str(v) for v in EXPORT_READABLE_VERSIONS)
        raise InvalidInput(
            _("Only version %(versions)s exports can be imported.") % {"versions": readable},
            code=ErrorCode.INVALID_IMPORT,
        )


def import_items(data, *, section: str = "user", kinds=IDENTITY_KINDS, required: bool = True) -> list[dict]:
    """The items of ``memories.<section>`` in an export, checked before anything is written:
    at most ``MAX_IMPORT_ITEMS`` items, known keys only, a kind of the tier, a content the memory
    service takes (``validate_content``); metadata and evidence are checked by the memory service."""
    memories = data.get("memories")
    items = memories.get(section) if isinstance(memories, dict) else None
    if items is None and not required:
        return []
    if not isinstance(items, list):
        raise InvalidInput(
            _("memories.%(section)s must be a list.") % {"section": section}, code=ErrorCode.INVALID_IMPORT
        )
    if len(items) > MAX_IMPORT_ITEMS:
        raise InvalidInput(
            _("At most %(n)s memories can be imported at once.") % {"n": MAX_IMPORT_ITEMS}, code=ErrorCode.TOO_MANY
        )
    for index, item in enumerate(items):
        if not isinstance(item, dict):
            raise import_error(section, index, _("must be an object."))
        unknown = sorted(set(item) - set(EXPORT_ITEM_KEYS))
        if unknown:
            raise import_error(section, index, _("unknown keys %(keys)s.") % {"keys": ", ".join(map(str, unknown))})
        if item.get("kind") not in kinds:
            raise import_error(
                section,
                index,
                _("kind must be one of %(kinds)s.") % {"kinds": ", ".join(sorted(kinds))},
                "invalid_kind",
            )
        try:
            memory_services.validate_content(item.get("content"))  # the memory service's own check
        except DomainError as exc:
            raise import_error(section, index, exc.message, exc.code) from None
        if item.get("status", Status.ACTIVE) not in Status.values:
            raise import_error(section, index, _("unknown status."))
        for key in ("metadata", "evidence"):
            if item.get(key) is not None and not isinstance(item[key], dict):
                raise import_error(section, index, _("%(key)s must be an object.") % {"key": key})
        for key in IMPORTED_KEYS:
            if key in item and item[key] is not None and not isinstance(item[key], str):
                raise import_error(section, index, _("%(key)s must be a string.") % {"key": key})
        item["expires_at"] = _import_expiry(item.get("expires_at"), section=section, index=index)
        if not isinstance(item.get("paused", False), bool):
            raise import_error(section, index, _("paused must be true or false."), "invalid_paused")
    return items


def _import_expiry(value, *, section: str, index: int):
    """``expires_at`` of an exported item: null, or an ISO 8601 date-time with a time zone. One
    that has passed is not an error: the item is skipped (``expired``) when the file is written."""
    if value is None:
        return None
    parsed = None
    if isinstance(value, str) and len(value) <= 64:
        try:
            parsed = parse_datetime(value.strip())
        except ValueError:
            parsed = None
    if parsed is None:
        raise import_error(section, index, _("expires_at must be an ISO 8601 date-time or null."), "invalid_expires_at")
    if timezone.is_naive(parsed):
        raise import_error(section, index, _("expires_at needs a time zone."), "invalid_expires_at")
    try:
        return in_utc(parsed)
    except OutOfRange:
        raise import_error(
            section, index, _("expires_at lies outside the years 1 to 9999 in UTC."), "invalid_expires_at"
        ) from None


def import_parse(raw: bytes) -> dict:
    """An uploaded export file: at most ``MAX_IMPORT_BYTES`` of UTF-8 JSON, nested no deeper
    than the API allows, with no NUL characters or lone surrogates (the API body rules)."""
    if len(raw) > MAX_IMPORT_BYTES:
        raise InvalidInput(
            _("The file is larger than %(n)s bytes.") % {"n": MAX_IMPORT_BYTES}, code=ErrorCode.TOO_LARGE
        )
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise InvalidInput(_("The file is not UTF-8 text."), code=ErrorCode.INVALID_IMPORT) from None
    max_depth = settings.API_MAX_JSON_DEPTH
    if text.count("[") + text.count("{") > max_depth and json_nesting_depth(text) > max_depth:
        raise InvalidInput(_("The file nests deeper than %(n)s levels.") % {"n": max_depth}, code=ErrorCode.TOO_DEEP)
    try:
        data = json.loads(text, object_pairs_hook=unique_keys)
    except DuplicateKey as exc:
        raise InvalidInput(
            _("The file is not valid: %(error)s") % {"error": exc}, code=ErrorCode.DUPLICATE_KEY
        ) from None
    except (ValueError, RecursionError):
        raise InvalidInput(_("The file is not JSON."), code=ErrorCode.INVALID_IMPORT) from None
    problem = json_text_problem(data)
    if problem:
        raise InvalidInput(
            _("The file has a string that %(problem)s.") % {"problem": problem}, code=ErrorCode.INVALID_IMPORT
        )
    return data


def _section(data: dict, name: str) -> dict:
    value = data.get(name)
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise InvalidInput(_("%(name)s must be an object.") % {"name": name}, code=ErrorCode.INVALID_IMPORT)
    return value


def notes_to_restore(data: dict) -> dict[str, str]:
    """``notes_files`` of an export: a known file name → its text (``null``: the file did not
    exist, and an entry the export could not read are left alone); every text within the
    workspace limits."""
    notes = {}
    for name, content in _section(data, "notes_files").items():
        if name not in WORKSPACE_FILES:
            raise InvalidInput(
                _("notes_files.%(name)s: only %(files)s can be imported.")
                % {"name": name, "files": ", ".join(WORKSPACE_FILES)},
                code=ErrorCode.INVALID_IMPORT,
            )
        if content is None or isinstance(content, dict):
            continue
        try:
            notes[name] = validate_workspace_content(content)
        except DomainError as exc:
            raise InvalidInput(f"notes_files.{name}: {exc.message}", code=exc.code) from None
    return notes


def settings_to_restore(data: dict) -> tuple[dict, dict]:
    """(``enable_memory`` if present, auto-memory fields present), checked by the rules the
    settings pages use."""
    settings_data = _section(data, "settings")
    unknown = sorted(set(settings_data) - {"enable_memory", "auto_memory"})
    if unknown:
        raise InvalidInput(
            _("settings: unknown keys %(keys)s.") % {"keys": ", ".join(map(str, unknown))},
            code=ErrorCode.INVALID_IMPORT,
        )
    switch = {}
    if "enable_memory" in settings_data:
        if not isinstance(settings_data["enable_memory"], bool):
            raise InvalidInput(_("settings.enable_memory must be true or false."), code=ErrorCode.INVALID_SETTINGS)
        switch["enable_memory"] = settings_data["enable_memory"]
    auto = settings_data.get("auto_memory")
    if auto is None:
        auto = {}
    if not isinstance(auto, dict):
        raise InvalidInput(_("settings.auto_memory must be an object."), code=ErrorCode.INVALID_IMPORT)
    try:
        auto = automemory_services.auto_memory_settings_validate(dict(auto))
    except DomainError as exc:
        raise InvalidInput(f"settings.auto_memory: {exc.message}", code=exc.code) from None
    return switch, auto


def profile_to_restore(data: dict) -> dict:
    """The profile fields present in ``user`` (never the username), each checked by the model's
    own validators (time zone, language, no credentials in the preferences)."""
    changes = {}
    for name, value in _section(data, "user").items():
        if name not in PROFILE_FIELDS:
            continue  # the username and anything else are context, never imported
        model_field = cast(models.Field, Profile._meta.get_field(name))  # PROFILE_FIELDS are concrete fields
        try:
            if name == "preferences" and not isinstance(value, dict):
                # An empty list would pass the model's validators, which skip empty values.
                raise ValidationError(_("must be an object."))
            if name != "preferences":
                if not isinstance(value, str):
                    raise ValidationError(_("must be a string."))
                clean_text(value, field=name)
            changes[name] = model_field.clean(value, None)
        except ValidationError as exc:
            raise InvalidInput(f"user.{name}: {' '.join(exc.messages)}", code=ErrorCode.INVALID_PROFILE) from None
        except DomainError as exc:
            raise InvalidInput(f"user.{name}: {exc.message}", code=exc.code) from None
    return changes
