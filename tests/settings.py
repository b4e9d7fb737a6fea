"""Test settings: the production module plus explicit test overrides."""

import os
import tempfile

os.environ.setdefault("SECRET_KEY", "test-only-secret-key-not-for-production-use-0123456789")
os.environ.setdefault("DEBUG", "0")
os.environ.setdefault("WORKSPACE_ROOT", tempfile.mkdtemp(prefix="memsvc-ws-"))

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
# Static files straight from the app's folders (nothing is collected for the suite).
WHITENOISE_AUTOREFRESH = True
WHITENOISE_USE_FINDERS = True
