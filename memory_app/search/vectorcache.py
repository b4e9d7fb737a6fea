"""The exact dense path's vectors: a per-process cache of each scope's document vectors, kept in
step with the scope's ``version`` and bounded in bytes (``MEMORY_VECTOR_CACHE_BYTES``)."""

import threading
from collections import OrderedDict
from collections.abc import Iterator
from typing import Any, NamedTuple

import numpy as np
from django.conf import settings
from django.db import connection
from numpy.typing import ArrayLike

from config.metrics import VECTOR_CACHE_BYTES
from memory_app.search.embeddings import (
    DTYPE,
)
from memory_app.search.models import SearchDocument


def vector_cache_bytes() -> int:
    return int(getattr(settings, "MEMORY_VECTOR_CACHE_BYTES", 200 * 1024 * 1024))


def exact_vector_limit(dim: int) -> int:
    """Documents per search whose vectors fit in the per-process cache for exact ranking."""
    return vector_cache_bytes() // (dim * DTYPE.itemsize + 16 + REF_BYTES)  # + id and recipe stamp


REF_BYTES = 120  # about what a cached key or ref (a tuple or a short string in a dict) costs


class CacheEntry(NamedTuple):
    """The cached vectors of one scope, as of ``version`` of the scope."""

    version: int
    model: str
    ids: np.ndarray  # document ids, one per row of ``matrix``
    matrix: np.ndarray
    # (document id, text hash, recipe) per row, where an id may be handed out again (SQLite)
    keys: list[tuple[int, str, int]] | None
    # else the id and recipe of each row as one number (``_stamps``)
    stamps: np.ndarray | None
    refs: dict[int, str]  # every document id of the scope (embedded or not) → its ref
    total: np.ndarray  # the sum of the rows of ``matrix`` (float64): the scope's share of the mean vector

    @property
    def nbytes(self) -> int:
        """About what the entry holds: its ids and vectors, a key per vector (SQLite) or a stamp
        and a ref per document of the scope."""
        keys = len(self.keys) * REF_BYTES if self.keys is not None else 0
        stamps = self.stamps.nbytes if self.stamps is not None else 0
        return self.ids.nbytes + self.matrix.nbytes + self.total.nbytes + keys + stamps + len(self.refs) * REF_BYTES


def _stamps(ids: ArrayLike, recipes: ArrayLike) -> np.ndarray:
    """A document's id and the recipe of its vector as one int64 (ids stay far below 2**47)."""
    return (np.asarray(ids, dtype=np.int64) << 16) | np.asarray(recipes, dtype=np.int64)


class _ScopeRow(NamedTuple):
    """A document of the scope as ``_VectorCache.entry`` reads it (no vector)."""

    id: int
    text_hash: str
    ref: str
    model: str
    recipe: int


def _vectors_of(doc_ids: np.ndarray, model: str, dim: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(ids, recipes, matrix)`` of those of ``doc_ids`` that have a vector of ``model`` (PostgreSQL),
    in one statement whose results come back in binary: the vectors' bytes as stored, where
    Django's cursors (parameters bound on the client) get them as hex text to decode: the cold
    read of a user's 10,000 vectors took 141 ms this way against 326–406 ms (docs/search.md)."""
    if not len(doc_ids):
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64), np.zeros((0, dim), dtype=DTYPE)
    import psycopg  # noqa: PLC0415 - only where PostgreSQL is the database

    connection.ensure_connection()
    with psycopg.Cursor(connection.connection) as cursor:
        cursor.execute(
            f"SELECT id, recipe, vector FROM {SearchDocument._meta.db_table}"
            " WHERE id = ANY(%s::bigint[]) AND model = %s AND octet_length(vector) = %s ORDER BY id",
            [doc_ids.tolist(), model, dim * np.dtype(DTYPE).itemsize],
            binary=True,
            prepare=False,  # no named statement left on the connection (a transaction pooler's)
        )
        rows = cursor.fetchall()
    ids = np.fromiter((row[0] for row in rows), dtype=np.int64, count=len(rows))
    recipes = np.fromiter((row[1] for row in rows), dtype=np.int64, count=len(rows))
    matrix = np.frombuffer(b"".join(row[2] for row in rows), dtype=DTYPE).reshape(len(rows), dim)
    return ids, recipes, matrix


class _VectorCache:
    """Per-process ``scope id → CacheEntry`` (version, model, document ids, matrix, keys, refs), least
    recently used out once the entries hold more than ``MEMORY_VECTOR_CACHE_BYTES`` (ids, vectors,
    keys and refs; the last entry stays whatever its size, while it is in use); ``refs`` maps
    every document id of the scope (embedded or not) to its ref, as of that version, so a search
    needs no statement to name its hits.

    On a version change the id list of the scope is read again (with the refs and the recipe of
    each vector); vectors already held are reused where the document and its vector's recipe are
    the same (a document's vector changes only when it is made again by a newer recipe:
    ``embedder.embed_stale``).
    """

    def __init__(self, max_bytes: int | None = None) -> None:
        self.max_bytes = max_bytes
        self._data: OrderedDict[tuple[str, object, int], CacheEntry] = OrderedDict()
        self._lock = threading.Lock()
        self.bytes = 0

    def clear(self) -> None:
        with self._lock:
            self._data.clear()
            self.bytes = 0
        VECTOR_CACHE_BYTES.set(0)

    @staticmethod
    def _load(doc_ids: list[int], model: str, *, with_hash: bool = False) -> Iterator[tuple[Any, ...]]:
        fields = ("id", "recipe", "text_hash", "vector") if with_hash else ("id", "recipe", "vector")
        for start in range(0, len(doc_ids), 2000):
            chunk = doc_ids[start : start + 2000]
            yield from SearchDocument.objects.filter(pk__in=chunk, model=model).values_list(*fields)

    def held(self, scope_id: int, version: int, model: str) -> CacheEntry | None:
        """The entry of a scope if it is current, else None (no statement)."""
        cache_key = (connection.alias, connection.settings_dict.get("NAME"), scope_id)
        with self._lock:
            entry = self._data.get(cache_key)
            if entry is not None and entry.version == version and entry.model == model:
                self._data.move_to_end(cache_key)
                return entry
        return None

    def refs(self, scope_id: int, version: int, model: str, dim: int) -> dict[int, str]:
        return self.entry(scope_id, version, model, dim).refs

    def _read_by_id(
        self, scope_id: int, model: str, dim: int, entry: CacheEntry | None, held_entry: CacheEntry | None
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, dict[int, str], np.ndarray]:
        """A scope's new version where document ids are never handed out again (PostgreSQL
        sequences): a document's vector then changes only with its recipe (a new text is a new
        document), and its ref never. One narrow statement reads the scope's id list with each
        document's recipe and whether its vector is of ``model``; the refs only of documents above
        the highest one held (a document below it that is not held, committed late, is read with
        its ref by a second statement); only the new vectors are loaded. When nothing held went
        (the usual case: a message more) the new rows are appended to the held ones and the sum
        of the vectors is the held sum plus theirs. ``(ids, matrix, stamps, refs, total)``."""
        known = entry.refs if entry is not None else {}
        above = max(known, default=-1)
        with connection.cursor() as cursor:
            cursor.execute(
                f"SELECT id, recipe, model = %s, CASE WHEN id > %s THEN ref END FROM {SearchDocument._meta.db_table}"
                " WHERE scope_id = %s ORDER BY id",
                [model, above, scope_id],
            )
            rows = cursor.fetchall()
            ids_col, recipes_col, ours_col, refs_col = zip(*rows, strict=True) if rows else ((), (), (), ())
            present = set(ids_col)
            refs = {doc_id: ref for doc_id, ref in known.items() if doc_id in present}
            refs.update((doc_id, ref) for doc_id, ref in zip(ids_col, refs_col, strict=True) if ref is not None)
            if late := list(present - refs.keys()):
                cursor.execute(f"SELECT id, ref FROM {SearchDocument._meta.db_table} WHERE id = ANY(%s)", [late])
                refs.update(cursor.fetchall())  # one gone meanwhile has no ref: not a hit to name
        ours = np.fromiter(ours_col, dtype=bool, count=len(rows))
        wanted_ids = np.fromiter(ids_col, dtype=np.int64, count=len(rows))[ours]
        wanted = _stamps(wanted_ids, np.fromiter(recipes_col, dtype=np.int64, count=len(rows))[ours])
        if held_entry is not None and held_entry.stamps is not None:
            keep = np.isin(held_entry.stamps, wanted)
            if keep.all():  # nothing held went: no copy
                old_ids, old_matrix, old_stamps = held_entry.ids, held_entry.matrix, held_entry.stamps
                old_total = held_entry.total
            else:
                old_ids, old_matrix = held_entry.ids[keep], held_entry.matrix[keep]
                old_stamps, old_total = held_entry.stamps[keep], None
        else:
            old_ids, old_matrix = np.zeros(0, dtype=np.int64), np.zeros((0, dim), dtype=np.float32)
            old_stamps, old_total = np.zeros(0, dtype=np.int64), np.zeros(dim, dtype=np.float64)
        new_ids, new_recipes, added_rows = _vectors_of(np.setdiff1d(wanted_ids, old_ids), model, dim)
        if not len(new_ids):
            matrix, added = old_matrix, np.zeros(dim, dtype=np.float64)
        else:
            matrix, added = np.vstack([old_matrix, added_rows]), added_rows.sum(axis=0, dtype=np.float64)
        total = old_total + added if old_total is not None else matrix.sum(axis=0, dtype=np.float64)
        ids = np.concatenate([old_ids, new_ids])
        stamps = np.concatenate([old_stamps, _stamps(new_ids, new_recipes)])
        return ids, matrix, stamps, refs, total

    def _read_by_key(
        self, scope_id: int, model: str, dim: int, held_entry: CacheEntry | None
    ) -> tuple[np.ndarray, np.ndarray, list[tuple[int, str, int]], dict[int, str]]:
        """A scope's new version where an id may be handed out again (SQLite, after a rollback):
        every document's id, text hash, ref, model and recipe are read, and vectors already held
        are reused by (id, text hash, recipe). ``(ids, matrix, keys, refs)``."""
        with connection.cursor() as cursor:
            cursor.execute(
                f"SELECT id, text_hash, ref, model, recipe FROM {SearchDocument._meta.db_table} WHERE scope_id = %s ORDER BY id",
                [scope_id],
            )
            everything = [_ScopeRow(*row) for row in cursor.fetchall()]
        refs = {row.id: row.ref for row in everything}
        keys = [(row.id, row.text_hash, row.recipe) for row in everything if row.model == model]
        held = dict(zip(held_entry.keys, held_entry.matrix, strict=True)) if held_entry and held_entry.keys else {}
        missing = [key for key in keys if key not in held]
        wanted_keys = set(missing)
        for doc_id, recipe, digest, raw in self._load([k[0] for k in missing], model, with_hash=True):
            key = (doc_id, digest, recipe)
            if key in wanted_keys and raw is not None and len(raw) == dim * 4:
                held[key] = np.frombuffer(bytes(raw), dtype=DTYPE)
        keys = [key for key in keys if key in held]
        matrix = np.vstack([held[key] for key in keys]) if keys else np.zeros((0, dim), dtype=np.float32)
        ids = np.asarray([key[0] for key in keys], dtype=np.int64)
        return ids, matrix, keys, refs

    def entry(self, scope_id: int, version: int, model: str, dim: int) -> CacheEntry:
        current = self.held(scope_id, version, model)
        if current is not None:
            return current
        cache_key = (connection.alias, connection.settings_dict.get("NAME"), scope_id)
        with self._lock:
            entry = self._data.get(cache_key)
        held_entry = entry if entry is not None and entry.model == model else None
        if connection.vendor == "postgresql":
            ids, matrix, stamps, refs, total = self._read_by_id(scope_id, model, dim, entry, held_entry)
            keys = None
        else:
            ids, matrix, keys, refs = self._read_by_key(scope_id, model, dim, held_entry)
            stamps, total = None, matrix.sum(axis=0, dtype=np.float64)
        entry = CacheEntry(version, model, ids, matrix, keys, stamps, refs, total)
        limit = self.max_bytes if self.max_bytes is not None else vector_cache_bytes()
        with self._lock:
            self._data[cache_key] = entry
            self._data.move_to_end(cache_key)
            cache_bytes = sum(cached.nbytes for cached in self._data.values())
            while cache_bytes > limit and len(self._data) > 1:
                _, dropped = self._data.popitem(last=False)
                cache_bytes -= dropped.nbytes
            self.bytes = cache_bytes
        VECTOR_CACHE_BYTES.set(cache_bytes)
        return entry


vector_cache = _VectorCache()
