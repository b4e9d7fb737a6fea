"""Every route of the app, collected from the packages that own them.

``api_urlpatterns`` are mounted under ``/api/``; ``web_urlpatterns`` at the site root in the
``web`` namespace (the pages of ``identity_app`` share that namespace); ``compat_urlpatterns``
(the mem0-compatible API) both at the site root and under ``/api/mem0/``.
"""

from identity_app.web import views as identity_web
from memory_app.automemory import api as automemory_api
from memory_app.automemory import web as automemory_web
from memory_app.compat import api as compat_api
from memory_app.context import api as context_api
from memory_app.home import api as home_api
from memory_app.home import web as home_web
from memory_app.mcp import web as mcp_web
from memory_app.memories import api as memories_api
from memory_app.memories import web as memories_web
from memory_app.notes import api as notes_api
from memory_app.notes import web as notes_web
from memory_app.ops import api as ops_api
from memory_app.runs import api as runs_api
from memory_app.runs import web as runs_web
from memory_app.scoped import api as scoped_api
from memory_app.scoped import web as scoped_web
from memory_app.store import api as store_api
from memory_app.threads import api as threads_api

api_urlpatterns = [
    *memories_api.urlpatterns,
    *notes_api.urlpatterns,
    *threads_api.urlpatterns,
    *runs_api.urlpatterns,
    *context_api.urlpatterns,
    *automemory_api.urlpatterns,
    *scoped_api.urlpatterns,
    *ops_api.urlpatterns,
    *home_api.urlpatterns,
    *store_api.urlpatterns,
]

web_urlpatterns = [
    *home_web.urlpatterns,
    *memories_web.urlpatterns,
    *identity_web.urlpatterns,
    *notes_web.urlpatterns,
    *runs_web.urlpatterns,
    *automemory_web.urlpatterns,
    *scoped_web.urlpatterns,
    *mcp_web.urlpatterns,
]

compat_urlpatterns = [*compat_api.urlpatterns]
