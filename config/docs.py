"""The browsable API docs (Swagger UI from the sidecar package, no CDN) under the CSP.

The split view serves the page and its init script as two responses (``?script`` for the
script), so the page has no inline script. The script carries the CSRF token that "Try it
out" sends, so it is marked same-origin: another site cannot load it with ``<script src>``.
"""

from drf_spectacular.views import SpectacularSwaggerSplitView
from rest_framework.request import Request


class ApiDocsView(SpectacularSwaggerSplitView):
    def finalize_response(self, request: Request, response, *args, **kwargs):
        response = super().finalize_response(request, response, *args, **kwargs)
        response["Cross-Origin-Resource-Policy"] = "same-origin"
        return response
