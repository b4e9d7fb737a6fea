"""One settings module for every environment, configured by environment variables.

Unset DATABASE_URL means the embedded SQLite default; set, it must point at PostgreSQL.
"""

import os
import re
from datetime import timedelta
from pathlib import Path
from typing import Any, overload

import dj_database_url
from csp.constants import NONCE, NONE, SELF
from django.core.exceptions import ImproperlyConfigured

BASE_DIR = Path(__file__).resolve().parent.parent

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


@overload
def env_str(name: str, default: str) -> str: ...
@overload
def env_str(name: str, default: None = None) -> str | None: ...
def env_str(name: str, default: str | None = None) -> str | None:
    return os.environ.get(name, default)


def env_bool(name: str, default: bool) -> bool:
    raw = os.environ.get(name)
    if raw is None:
        return default
    value = raw.strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise ImproperlyConfigured(f"{name} must be a boolean (1/0, true/false), got {raw!r}")


def env_int(name: str, default: int) -> int:
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        return int(raw)
    except ValueError:
        raise ImproperlyConfigured(f"{name} must be an integer, got {raw!r}") from None


def env_list(name: str, default: list[str]) -> list[str]:
    raw = os.environ.get(name)
    if raw is None:
        return default
    return [item.strip() for item in raw.split(",") if item.strip()]


DEBUG = env_bool("DEBUG", False)

SECRET_KEY = env_str("SECRET_KEY")
if not SECRET_KEY:
    if not DEBUG:
        raise ImproperlyConfigured("SECRET_KEY is required when DEBUG is off")
    SECRET_KEY = "insecure-development-key-only-used-with-debug-on"

ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", ["127.0.0.1", "localhost"] if DEBUG else [])
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", [])

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "django_filters",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "axes",
    "csp",
    "identity_app",
    "memory_app",
]

MIDDLEWARE = [
    "config.api.routes.CompatDoubledSlashMiddleware",  # before anything reads the path
    "config.logs.RequestIdMiddleware",  # every response and log line gets the request id
    "config.metrics.MetricsMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "csp.middleware.CSPMiddleware",
    "config.validation.RejectNulInRequestMiddleware",
    "config.validation.ApiBodyLimitMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "config.api.errors.ApiNotFoundMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "identity_app.web.middleware.UserLocaleMiddleware",  # language and time zone of the pages
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "config.web.DomainErrorMiddleware",
    "axes.middleware.AxesMiddleware",  # last: answers a login refused during a lockout
]

ROOT_URLCONF = "config.urls"
WSGI_APPLICATION = "config.wsgi.application"
ASGI_APPLICATION = "config.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.template.context_processors.i18n",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "identity_app.web.context_processors.navigation",
                "identity_app.web.account.first_contact",
            ],
        },
    },
]

# --- Database -------------------------------------------------------------------------------
DATABASE_URL = env_str("DATABASE_URL")
SQLITE_PATH = Path(env_str("SQLITE_PATH", str(BASE_DIR / "var" / "db.sqlite3")))
if DATABASE_URL:
    _db = dj_database_url.parse(DATABASE_URL, conn_max_age=env_int("DB_CONN_MAX_AGE", 60))
    if _db["ENGINE"] != "django.db.backends.postgresql":
        raise ImproperlyConfigured("DATABASE_URL must be a postgres:// URL (unset it for SQLite)")
    _db["CONN_HEALTH_CHECKS"] = True
    # DB_POOL_SIZE > 0: a psycopg connection pool per process (of at most that many
    # connections, shared by the process's threads) instead of one persistent connection per
    # thread (docs/deploy.md).
    if env_int("DB_POOL_SIZE", 0) > 0:
        _db["CONN_MAX_AGE"] = 0  # the pool keeps the connections; health checks run on checkout
        _db.setdefault("OPTIONS", {})["pool"] = {"min_size": 1, "max_size": env_int("DB_POOL_SIZE", 0), "timeout": 10}
    if env_str("DATABASE_TEST_NAME"):
        _db["TEST"] = {"NAME": env_str("DATABASE_TEST_NAME")}
else:
    SQLITE_PATH.parent.mkdir(parents=True, exist_ok=True)
    _db = {
        "ENGINE": "django.db.backends.sqlite3",
        "NAME": str(SQLITE_PATH),
        "OPTIONS": {
            # IMMEDIATE takes the write lock at BEGIN, so read-modify-write transactions
            # serialize instead of failing with "database is locked" on upgrade.
            "transaction_mode": "IMMEDIATE",
            "timeout": 20,
            "init_command": ("PRAGMA journal_mode=WAL;PRAGMA synchronous=NORMAL;PRAGMA foreign_keys=ON;"),
        },
    }
DATABASES = {"default": _db}
if not DATABASE_URL:
    # The vector table's covering index (INCLUDE columns) is a PostgreSQL feature; SQLite
    # builds the same index on its key columns only, which is all it needs there.
    SILENCED_SYSTEM_CHECKS = ["models.W040"]
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# --- Cache (API throttle counters) ----------------------------------------------------------
# "locmem": per process, so N processes (or nodes) each allow the full rates. "database": a
# table in the main database (`manage.py createcachetable`) that every process and node
# shares, at a few extra queries per API request. "redis" (the default when REDIS_URL is set):
# Django's built-in Redis backend, shared by every node at one round trip per counter. Login
# lockouts (django-axes) and sessions are rows in the database, not in the cache.
# While Redis cannot answer, the limits count per process (config/throttling.py): a request
# waits at most REDIS_TIMEOUT_MS for it, then the breaker leaves it alone for
# THROTTLE_BREAKER_SECONDS before one request tries it again.
REDIS_TIMEOUT_MS = env_int("REDIS_TIMEOUT_MS", 50)
if not 1 <= REDIS_TIMEOUT_MS <= 10_000:
    raise ImproperlyConfigured("REDIS_TIMEOUT_MS must be between 1 and 10000")
THROTTLE_BREAKER_SECONDS = env_int("THROTTLE_BREAKER_SECONDS", 5)
if not 1 <= THROTTLE_BREAKER_SECONDS <= 3600:
    raise ImproperlyConfigured("THROTTLE_BREAKER_SECONDS must be between 1 and 3600")
_CACHE_BACKENDS = {
    "locmem": "django.core.cache.backends.locmem.LocMemCache",
    "database": "django.core.cache.backends.db.DatabaseCache",
    "redis": "django.core.cache.backends.redis.RedisCache",
}
REDIS_URL = env_str("REDIS_URL", "")
CACHE_BACKEND = env_str("CACHE_BACKEND", "redis" if REDIS_URL else "locmem")
if CACHE_BACKEND not in _CACHE_BACKENDS:
    raise ImproperlyConfigured("CACHE_BACKEND must be 'locmem', 'database' or 'redis'")
if CACHE_BACKEND == "redis":
    if not REDIS_URL.startswith(("redis://", "rediss://", "unix://")):
        raise ImproperlyConfigured("CACHE_BACKEND=redis needs REDIS_URL (redis://host:6379/0, rediss://… or unix://…)")
    CACHES = {
        "default": {
            "BACKEND": _CACHE_BACKENDS["redis"],
            "LOCATION": REDIS_URL,
            "KEY_PREFIX": env_str("CACHE_KEY_PREFIX", "memsvc"),
            # A Redis that stops answering must not hang requests: fail fast, and the throttle
            # counts per process meanwhile (config/throttling.py).
            "OPTIONS": {
                "socket_connect_timeout": REDIS_TIMEOUT_MS / 1000,
                "socket_timeout": REDIS_TIMEOUT_MS / 1000,
            },
        }
    }
else:
    CACHES = {
        "default": {
            "BACKEND": _CACHE_BACKENDS[CACHE_BACKEND],
            "LOCATION": "memory_cache",
            # Past this many entries a third is dropped (expired ones first in the database), which
            # resets those counters: room for one counter per active client and scope.
            "OPTIONS": {"MAX_ENTRIES": env_int("CACHE_MAX_ENTRIES", 20000)},
        }
    }

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

LANGUAGE_CODE = "en"
# The web pages speak the profile's language, else the one the language switch stored in a
# cookie, else the browser's (Accept-Language); the API always answers in English.
LANGUAGES = [("en", "English"), ("zh-hans", "简体中文")]
LOCALE_PATHS = [BASE_DIR / "locale"]
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = Path(env_str("STATIC_ROOT", str(BASE_DIR / "var" / "static")))
STATICFILES_DIRS = [BASE_DIR / "static"]
# The app serves its static files itself (WhiteNoise). Without DEBUG they come from STATIC_ROOT
# as `collectstatic` left them (make serve runs it): names carry a content hash, so browsers
# may cache them for ever, and compressed copies are made once.
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {
        "BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"
        if DEBUG
        else "whitenoise.storage.CompressedManifestStaticFilesStorage"
    },
}

LOGIN_URL = "login"
# First contact: who to ask for an account (the login page says it), how long a one-time
# sign-in link works, and the address the links printed by `issue_token --sign-in-link` start with.
ACCOUNT_CONTACT = env_str("ACCOUNT_CONTACT", "")
SIGN_IN_LINK_HOURS = env_int("SIGN_IN_LINK_HOURS", 24)
if not 1 <= SIGN_IN_LINK_HOURS <= 24 * 30:
    raise ImproperlyConfigured("SIGN_IN_LINK_HOURS must be between 1 and 720")
# Unset: the address the pages were opened at, else the one `make run` / `make serve` were last
# started with (they write it to SERVER_ADDRESS_FILE), else http://localhost:8000, said as such
# beside every printed link (config/public_address.py).
PUBLIC_BASE_URL = env_str("PUBLIC_BASE_URL", "").strip().rstrip("/")
SERVER_ADDRESS_FILE = Path(env_str("SERVER_ADDRESS_FILE", str(BASE_DIR / "var" / "server-address")))
# Where MCP clients reach `manage.py mcp_server --http` (the "Connect your agent" page shows it);
# unset: the public address + /mcp, behind the site's TLS proxy (docs/mcp.md).
MCP_PUBLIC_URL = env_str("MCP_PUBLIC_URL", "").strip().rstrip("/")
# Password reset by email works only with a real email backend (EMAIL_BACKEND, EMAIL_HOST, ...).
EMAIL_BACKEND = env_str("EMAIL_BACKEND", "django.core.mail.backends.dummy.EmailBackend")
EMAIL_HOST = env_str("EMAIL_HOST", "localhost")
EMAIL_PORT = env_int("EMAIL_PORT", 25)
DEFAULT_FROM_EMAIL = env_str("DEFAULT_FROM_EMAIL", "webmaster@localhost")
LOGIN_REDIRECT_URL = "web:home"
LOGOUT_REDIRECT_URL = "login"

# --- Product settings -----------------------------------------------------------------------
WORKSPACE_ROOT = Path(env_str("WORKSPACE_ROOT", str(BASE_DIR / "var" / "workspaces")))

# Auto-memory extraction: "deterministic" (no model) or "openai" (an OpenAI-compatible endpoint).
AUTO_MEMORY_EXTRACTOR = env_str("AUTO_MEMORY_EXTRACTOR", "deterministic")
if AUTO_MEMORY_EXTRACTOR not in ("deterministic", "openai"):
    raise ImproperlyConfigured("AUTO_MEMORY_EXTRACTOR must be 'deterministic' or 'openai'")
AUTO_MEMORY_LLM_BASE_URL = env_str("AUTO_MEMORY_LLM_BASE_URL", "")
AUTO_MEMORY_LLM_MODEL = env_str("AUTO_MEMORY_LLM_MODEL", "")
AUTO_MEMORY_LLM_API_KEY = env_str("AUTO_MEMORY_LLM_API_KEY", "")
AUTO_MEMORY_LLM_TIMEOUT = env_int("AUTO_MEMORY_LLM_TIMEOUT", 30)
# The on-demand round (POST /api/users/me/auto-memory/run, a background job): at most this many
# runs, and no new run is started once this many seconds have passed.
AUTO_MEMORY_MANUAL_ROUND_LIMIT = env_int("AUTO_MEMORY_MANUAL_ROUND_LIMIT", 5)
AUTO_MEMORY_MANUAL_ROUND_SECONDS = env_int("AUTO_MEMORY_MANUAL_ROUND_SECONDS", 20)
if not 1 <= AUTO_MEMORY_MANUAL_ROUND_LIMIT <= 50 or not 1 <= AUTO_MEMORY_MANUAL_ROUND_SECONDS <= 120:
    raise ImproperlyConfigured(
        "AUTO_MEMORY_MANUAL_ROUND_LIMIT must be 1..50 and AUTO_MEMORY_MANUAL_ROUND_SECONDS 1..120"
    )

# Expired memories (docs/tiers.md, "Expiry") leave every context, search and default list the
# second they expire; the worker deletes them for good this many days later (0: never, they stay
# listed as expired).
MEMORY_EXPIRED_GRACE_DAYS = env_int("MEMORY_EXPIRED_GRACE_DAYS", 30)
if not 0 <= MEMORY_EXPIRED_GRACE_DAYS <= 3650:
    raise ImproperlyConfigured("MEMORY_EXPIRED_GRACE_DAYS must be 0..3650")
# Minutes in which forgetting a whole chat can be undone (its rows are kept for its user alone,
# then deleted by memory_worker); 0: no undo, forgotten at once (docs/home.md, "Undo").
MEMORY_FORGET_UNDO_MINUTES = env_int("MEMORY_FORGET_UNDO_MINUTES", 10)
if not 0 <= MEMORY_FORGET_UNDO_MINUTES <= 24 * 60:
    raise ImproperlyConfigured("MEMORY_FORGET_UNDO_MINUTES must be 0..1440")

# Who read this? (docs/home.md): every time memory text reaches an agent, which items went to
# which run, principal and token is recorded, kept this many days (the worker purges older rows).
MEMORY_READS_RETENTION_DAYS = env_int("MEMORY_READS_RETENTION_DAYS", 90)
if not 1 <= MEMORY_READS_RETENTION_DAYS <= 3650:
    raise ImproperlyConfigured("MEMORY_READS_RETENTION_DAYS must be 1..3650")
# Rows wait in a per-process buffer until the end of the request (or the MCP call, or the
# worker's round) writes them in one INSERT; past this many waiting rows, new ones are dropped
# and counted (memsvc_memory_reads_total{result="dropped_full"}), never waiting.
MEMORY_READS_BUFFER = env_int("MEMORY_READS_BUFFER", 10_000)
if not 0 <= MEMORY_READS_BUFFER <= 1_000_000:
    raise ImproperlyConfigured("MEMORY_READS_BUFFER must be 0..1000000")
# The rows of an HTTP request are written by a thread of the process once its response is out
# (off: by the request's own thread, before it reads the connection's next request).
MEMORY_READS_IN_BACKGROUND = env_bool("MEMORY_READS_IN_BACKGROUND", True)

# Items learned in a typed chat whose kind routes to the global scope (decision, procedure,
# warning, summary): "review" keeps them in their chat, marked pending, until an operator approves
# the candidate in the admin; "direct" writes them to global at once, as the scope rules of
# docs/scoped-memory.md were first designed. Legacy untyped sessions always write to global.
MEMORY_CHAT_TO_GLOBAL = env_str("MEMORY_CHAT_TO_GLOBAL", "review")
if MEMORY_CHAT_TO_GLOBAL not in ("review", "direct"):
    raise ImproperlyConfigured("MEMORY_CHAT_TO_GLOBAL must be 'review' or 'direct'")

# Embeddings of chat/global items: "hashed" (deterministic, local) or "openai" (any
# OpenAI-compatible /embeddings endpoint; vectors are filled in by `refresh_embeddings`).
MEMORY_EMBEDDING_PROVIDER = env_str("MEMORY_EMBEDDING_PROVIDER", "e5")
if MEMORY_EMBEDDING_PROVIDER not in ("e5", "hashed", "openai"):
    raise ImproperlyConfigured("MEMORY_EMBEDDING_PROVIDER must be 'e5', 'hashed' or 'openai'")
# CPU threads of the e5 model per process. One is the default: with several threads, a busy
# machine (other requests, other processes) made one query take seconds instead of ~30 ms.
MEMORY_EMBEDDING_THREADS = env_int("MEMORY_EMBEDDING_THREADS", 1)
# What a server process loads before its first request (config/gunicorn.py, post_worker_init):
# dotted paths of functions without arguments. SERVER_WARMUP=0 leaves it to the first requests.
SERVER_WARMUPS = ["memory_app.search.warmup.warm", "config.api.query.warm"] if env_bool("SERVER_WARMUP", True) else []
# Embed new documents in a background thread of the process that wrote them (off the request
# path); the worker and `refresh_embeddings` catch up whatever a restart left behind.
MEMORY_EMBED_IN_BACKGROUND = env_bool("MEMORY_EMBED_IN_BACKGROUND", True)
# How searches without an explicit mode rank: hybrid (words + meaning), lexical or dense.
MEMORY_SEARCH_MODE = env_str("MEMORY_SEARCH_MODE", "hybrid")
if MEMORY_SEARCH_MODE not in ("hybrid", "lexical", "dense"):
    raise ImproperlyConfigured("MEMORY_SEARCH_MODE must be 'hybrid', 'lexical' or 'dense'")
MEMORY_EMBEDDING_URL = env_str("MEMORY_EMBEDDING_URL", "")
MEMORY_EMBEDDING_MODEL = env_str("MEMORY_EMBEDDING_MODEL", "text-embedding-3-small")
MEMORY_EMBEDDING_API_KEY = env_str("MEMORY_EMBEDDING_API_KEY", "")
MEMORY_EMBEDDING_DIM = env_int("MEMORY_EMBEDDING_DIM", 512)
# Dense ranking (docs/search.md): "auto" ranks searches over more than MEMORY_VECTOR_EXACT_DOCS
# documents with pgvector's HNSW index where PostgreSQL has the extension, the rest exactly in
# memory; "numpy" or "pgvector" force one (pgvector still needs the extension and its index).
MEMORY_VECTOR_BACKEND = env_str("MEMORY_VECTOR_BACKEND", "auto")
if MEMORY_VECTOR_BACKEND not in ("auto", "numpy", "pgvector"):
    raise ImproperlyConfigured("MEMORY_VECTOR_BACKEND must be 'auto', 'numpy' or 'pgvector'")
MEMORY_VECTOR_EXACT_DOCS = env_int("MEMORY_VECTOR_EXACT_DOCS", 150_000)
# Candidates of pgvector's HNSW search (hnsw.ef_search): more is better recall, slower searches.
MEMORY_VECTOR_EF_SEARCH = env_int("MEMORY_VECTOR_EF_SEARCH", 400)
if not 1 <= MEMORY_VECTOR_EF_SEARCH <= 1000:
    raise ImproperlyConfigured("MEMORY_VECTOR_EF_SEARCH must be between 1 and 1000")
# Bytes of vectors each process keeps for exact ranking (least recently used scopes out); a
# search over more vectors than fit is ranked by pgvector, or by words where there is none.
MEMORY_VECTOR_CACHE_BYTES = env_int("MEMORY_VECTOR_CACHE_BYTES", 200 * 1024 * 1024)
if MEMORY_VECTOR_CACHE_BYTES < 1024 * 1024:
    raise ImproperlyConfigured("MEMORY_VECTOR_CACHE_BYTES must be at least 1048576 (1 MiB)")

# API tokens: every key expires; this many days unless the issuer chooses (at most the maximum).
API_TOKEN_DEFAULT_DAYS = env_int("API_TOKEN_DEFAULT_DAYS", 90)
API_TOKEN_MAX_DAYS = env_int("API_TOKEN_MAX_DAYS", 365)
if not 1 <= API_TOKEN_DEFAULT_DAYS <= API_TOKEN_MAX_DAYS <= 3650:
    raise ImproperlyConfigured("API_TOKEN_DEFAULT_DAYS and API_TOKEN_MAX_DAYS must satisfy 1 <= default <= max <= 3650")

# --- Security (production defaults; DEBUG relaxes the ones that need HTTPS) -----------------
SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", not DEBUG)
SESSION_COOKIE_SECURE = env_bool("SESSION_COOKIE_SECURE", not DEBUG)
CSRF_COOKIE_SECURE = env_bool("CSRF_COOKIE_SECURE", not DEBUG)
SECURE_HSTS_SECONDS = env_int("SECURE_HSTS_SECONDS", 0 if DEBUG else 31536000)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", not DEBUG)
SECURE_HSTS_PRELOAD = env_bool("SECURE_HSTS_PRELOAD", not DEBUG)
SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https") if env_bool("TRUST_X_FORWARDED_PROTO", False) else None
SECURE_REFERRER_POLICY = "same-origin"
# Probes and scrapers talk plain HTTP to each node, behind the TLS-terminating proxy.
SECURE_REDIRECT_EXEMPT = [r"^healthz$", r"^readyz$", r"^metrics$"]
X_FRAME_OPTIONS = "DENY"
SESSION_COOKIE_HTTPONLY = True

# Web and admin login: after LOGIN_FAILURE_LIMIT wrong passwords for one username from one
# address, even the right password is refused for LOGIN_COOLOFF_MINUTES (django-axes; the
# count lives in the database, so every node sees it). A success resets the count.
AUTHENTICATION_BACKENDS = ["axes.backends.AxesStandaloneBackend", "django.contrib.auth.backends.ModelBackend"]
AXES_FAILURE_LIMIT = env_int("LOGIN_FAILURE_LIMIT", 5)
_cooloff_minutes = env_int("LOGIN_COOLOFF_MINUTES", 15)
if AXES_FAILURE_LIMIT < 1 or _cooloff_minutes < 1:
    raise ImproperlyConfigured("LOGIN_FAILURE_LIMIT and LOGIN_COOLOFF_MINUTES must be at least 1")
AXES_COOLOFF_TIME = timedelta(minutes=_cooloff_minutes)
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_RESET_ON_SUCCESS = True
AXES_DISABLE_ACCESS_LOG = True  # failures are kept; successful logins are not logged
AXES_CLIENT_IP_CALLABLE = "config.throttling.client_address"
AXES_LOCKOUT_CALLABLE = "identity_app.web.login.lockout_response"

# Content-Security-Policy on every response: scripts and styles from our own origin only (no
# inline script or style unless a template gives it the per-response nonce).
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": [SELF],
        "script-src": [SELF, NONCE],
        "style-src": [SELF, NONCE],
        "img-src": [SELF, "data:"],
        "font-src": [SELF],
        "connect-src": [SELF],
        "object-src": [NONE],
        "base-uri": [NONE],
        "form-action": [SELF],
        "frame-ancestors": [NONE],
    }
}

# --- REST API -------------------------------------------------------------------------------
# Rate limits per scope (config/throttling.py); API_THROTTLE=off turns them off (benchmarks).
API_THROTTLE = env_bool("API_THROTTLE", True)
API_THROTTLE_RATES = {
    "anon": env_str("API_THROTTLE_ANON", "60/minute"),
    "user": env_str("API_THROTTLE_USER", "1200/minute"),
    "run": env_str("API_THROTTLE_RUN", "600/minute"),
    "search": env_str("API_THROTTLE_SEARCH", "300/minute"),
}
for _scope, _rate in API_THROTTLE_RATES.items():
    if not re.fullmatch(r"\s*[1-9]\d*\s*/\s*(s|sec|second|m|min|minute|h|hour|d|day)\s*", _rate):
        raise ImproperlyConfigured(f"API_THROTTLE_{_scope.upper()} must look like 60/minute, got {_rate!r}")
REST_FRAMEWORK: dict[str, Any] = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "identity_app.authentication.ApiTokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": [
        "rest_framework.permissions.IsAuthenticated",
        "config.api.query.KnownQueryParameters",  # last: after the caller is known
    ],
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "DEFAULT_PARSER_CLASSES": ["config.validation.SafeJSONParser"],
    "DEFAULT_FILTER_BACKENDS": ["config.api.filters.ApiFilterBackend"],
    "DEFAULT_PAGINATION_CLASS": "config.api.pagination.DefaultPagination",
    "EXCEPTION_HANDLER": "config.api.errors.exception_handler",
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "UNAUTHENTICATED_USER": "django.contrib.auth.models.AnonymousUser",
    "DEFAULT_THROTTLE_CLASSES": [
        "config.throttling.AnonThrottle",
        "config.throttling.UserThrottle",
        "config.throttling.RunThrottle",
        "config.throttling.SearchThrottle",
    ],
    # Proxies in front that append the client to X-Forwarded-For; 0 ignores the header.
    "NUM_PROXIES": env_int("TRUSTED_PROXY_COUNT", 0),
}
if DEBUG:
    REST_FRAMEWORK["DEFAULT_RENDERER_CLASSES"].append("rest_framework.renderers.BrowsableAPIRenderer")

SPECTACULAR_SETTINGS = {
    "TITLE": "Memory service API",
    "DESCRIPTION": "Long-term memory for agents that never leaks between users, projects or chats.",
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "COMPONENT_SPLIT_REQUEST": True,
    # PATCH validates like PUT here (no partial serializers), so it documents the same fields.
    "COMPONENT_SPLIT_PATCH": False,
    "PREPROCESSING_HOOKS": ["config.api.schema.only_api_paths"],
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "config.api.schema.schema_error_responses",
    ],
    "ENUM_NAME_OVERRIDES": {
        "MemoryKindEnum": "memory_app.memories.models.Kind.choices",
        "IdentityMemoryKindEnum": "memory_app.memories.models.IDENTITY_KINDS",
        "ConversationSourceEnum": "memory_app.threads.models.ConversationSource.choices",
        "ConversationStatusEnum": "memory_app.threads.models.ConversationStatus.choices",
        "MessageTypeEnum": "memory_app.threads.models.MessageType.choices",
        "RunFinishStatusEnum": "memory_app.runs.api.FINISH_STATUS_CHOICES",
        "RunKindEnum": "memory_app.runs.models.RunKind.choices",
        "ProjectRoleEnum": "identity_app.models.Role.choices",
        "MessageRoleEnum": "memory_app.threads.models.MessageRole.choices",
        "RunStatusEnum": "memory_app.runs.models.RunStatus.choices",
        "MemoryTierEnum": "memory_app.memories.models.Tier.choices",
        "MemoryStatusEnum": "memory_app.memories.models.Status.choices",
        "AuthorEnum": "memory_app.home.provenance.AUTHORS",
    },
}

DATA_UPLOAD_MAX_MEMORY_SIZE = env_int("DATA_UPLOAD_MAX_MEMORY_SIZE", 1024 * 1024)
# API request bodies: refused (413) above this size before anything reads them, and (400)
# when arrays and objects nest deeper than this before they are decoded.
API_MAX_BODY_BYTES = env_int("API_MAX_BODY_BYTES", 1024 * 1024)

# The MCP HTTP transport: a session (an API token and the user it works for) keeps one run for
# its notes-file and history calls, finished once it has been idle this long; less than the run's
# 60 s lease, which only the calls renew (docs/mcp.md, Runs).
MCP_HTTP_RUN_IDLE_SECONDS = env_int("MCP_HTTP_RUN_IDLE_SECONDS", 30)
if not 1 <= MCP_HTTP_RUN_IDLE_SECONDS <= 50:
    raise ImproperlyConfigured("MCP_HTTP_RUN_IDLE_SECONDS must be between 1 and 50")
API_MAX_JSON_DEPTH = env_int("API_MAX_JSON_DEPTH", 32)
if API_MAX_BODY_BYTES < 1024 or not 2 <= API_MAX_JSON_DEPTH <= 200:
    raise ImproperlyConfigured("API_MAX_BODY_BYTES must be at least 1024 and API_MAX_JSON_DEPTH 2..200")

# --- Operations (docs/deploy.md) --------------------------------------------------------------
# A `memory_worker` runs beside the app (make serve): /readyz then also needs its heartbeat to
# be at most WORKER_HEARTBEAT_MAX_AGE seconds old, and background jobs wait for it. Without
# one, the process that queued a job runs it in a thread of its own after the commit.
WORKER_EXPECTED = env_bool("WORKER_EXPECTED", False)
WORKER_HEARTBEAT_MAX_AGE = env_int("WORKER_HEARTBEAT_MAX_AGE", 300)
JOBS_IN_PROCESS = env_bool("JOBS_IN_PROCESS", not WORKER_EXPECTED)
# A pending project invitation expires this many days after it was sent (or sent again): it can
# no longer be accepted, and memory_worker (or `manage.py expire_invitations`) deletes it.
INVITATION_EXPIRY_DAYS = env_int("INVITATION_EXPIRY_DAYS", 14)
if INVITATION_EXPIRY_DAYS < 1:
    raise ImproperlyConfigured("INVITATION_EXPIRY_DAYS must be at least 1")
# /readyz runs its checks (a query, a file created, synced and removed in WORKSPACE_ROOT) at most
# once per this many seconds per process and answers the probes in between from that result
# (0: every probe runs them).
READYZ_CHECK_SECONDS = env_int("READYZ_CHECK_SECONDS", 5)
if READYZ_CHECK_SECONDS < 0:
    raise ImproperlyConfigured("READYZ_CHECK_SECONDS must be 0 or more")
# GET /metrics needs `Authorization: Bearer <METRICS_TOKEN>`; without a token there is none.
METRICS_TOKEN = env_str("METRICS_TOKEN", "")
if METRICS_TOKEN and len(METRICS_TOKEN) < 16:
    raise ImproperlyConfigured("METRICS_TOKEN must be at least 16 characters")
# "plain" lines or "json" (one object per line, every extra field kept); ACCESS_LOG: one line
# per request (runserver writes its own).
LOG_FORMAT = env_str("LOG_FORMAT", "plain")
if LOG_FORMAT not in ("plain", "json"):
    raise ImproperlyConfigured("LOG_FORMAT must be 'plain' or 'json'")
ACCESS_LOG = env_bool("ACCESS_LOG", not DEBUG)

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "filters": {"request_id": {"()": "config.logs.RequestIdFilter"}},
    "formatters": {"plain": {"()": "config.logs.PlainFormatter"}, "json": {"()": "config.logs.JsonFormatter"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": LOG_FORMAT, "filters": ["request_id"]}},
    "root": {"handlers": ["console"], "level": env_str("LOG_LEVEL", "INFO")},
    "loggers": {"django.db.backends": {"level": "WARNING"}},
}
