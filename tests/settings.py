"""Test settings: the production module plus explicit test overrides."""

import atexit
import os
import shutil
import sys
import tempfile

os.environ.setdefault("SECRET_KEY", "test-only-secret-key-not-for-production-use-0123456789")
os.environ.setdefault("DEBUG", "0")
if "WORKSPACE_ROOT" not in os.environ:
    # One folder for the process that made it and the processes it starts (they inherit the
    # variable), removed when it exits: every process importing these settings made one, kept.
    os.environ["WORKSPACE_ROOT"] = tempfile.mkdtemp(prefix="memsvc-ws-")
    atexit.register(shutil.rmtree, os.environ["WORKSPACE_ROOT"], ignore_errors=True)

from config.settings import *  # noqa: F403

ALLOWED_HOSTS = ["testserver", "127.0.0.1", "localhost"]
SECURE_SSL_REDIRECT = False
SESSION_COOKIE_SECURE = False
CSRF_COOKIE_SECURE = False
SECURE_HSTS_SECONDS = 0
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
}
# Every record is built and formatted at DEBUG through the production JSON formatter, into a null
# stream (tests/logcheck.py: a record that cannot be built or formatted fails its test); the
# console still shows WARNING and above.
LOGGING["handlers"]["console"]["level"] = "WARNING"  # noqa: F405
LOGGING["handlers"]["checked"] = {  # noqa: F405
    "()": "tests.logcheck.FormattingHandler",
    "formatter": "json",
    "filters": ["request_id"],
}
LOGGING["root"]["handlers"] = ["console", "checked"]  # noqa: F405
LOGGING["root"]["level"] = "DEBUG"  # noqa: F405
# Throttle counters per process, and rates no ordinary test reaches; tests/test_throttling.py
# lowers them where it proves the limits.
CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}
API_THROTTLE_RATES = dict.fromkeys(API_THROTTLE_RATES, "100000/minute")  # noqa: F405
# The deterministic, instant embedding for the suite; the e5 model has its own tests
# (tests/memory_app/search/test_e5.py), which switch it on where they need it.
MEMORY_EMBEDDING_PROVIDER = "hashed"
MEMORY_EMBED_IN_BACKGROUND = False
# A request's reads are written before the test client returns (tests/memory_app/reads/test_reads.py
# switches the writer thread on where it proves it).
MEMORY_READS_IN_BACKGROUND = False
# Static files straight from the app's folders (nothing is collected for the suite).
WHITENOISE_AUTOREFRESH = True
WHITENOISE_USE_FINDERS = True
# SQLite: the test database is a file (in memory-backed /dev/shm where there is one), opened as
# production opens it (WAL, busy timeout), not Django's shared-cache in-memory database: there a
# second connection -- the in-process job runner's or the embedder's thread -- fails at once with
# "database table is locked" instead of waiting, and a server subprocess cannot see it at all.
# (Only in the test process: a server subprocess on these settings is given SQLITE_PATH.)
if DATABASES["default"]["ENGINE"].endswith("sqlite3") and "pytest" in sys.modules:  # noqa: F405
    import atexit
    import shutil

    _shm = "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else None
    _test_db_dir = tempfile.mkdtemp(prefix="memsvc-test-db-", dir=_shm)
    atexit.register(shutil.rmtree, _test_db_dir, ignore_errors=True)
    DATABASES["default"]["TEST"] = {"NAME": os.path.join(_test_db_dir, "test.sqlite3")}  # noqa: F405
