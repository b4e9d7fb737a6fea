from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path, re_path
from drf_spectacular.views import SpectacularAPIView

from config.docs import ApiDocsView
from config.metrics import metrics_view
from identity_app.web import account
from identity_app.web.login import AdminLoginForm, LoginForm
from memory_app import urls as memory_urls
from memory_app.ops import health

handler400 = "config.api.errors.api_aware_400"
handler403 = "config.api.errors.api_aware_403"
handler404 = "config.api.errors.api_aware_404"
handler500 = "config.api.errors.api_aware_500"

admin.site.login_form = AdminLoginForm

urlpatterns = [
    path("healthz", health.healthz, name="healthz"),
    path("readyz", health.readyz, name="readyz"),
    path("metrics", metrics_view, name="metrics"),
    path("admin/", admin.site.urls),
    path("accounts/login/", auth_views.LoginView.as_view(authentication_form=LoginForm), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    *account.urlpatterns,
    re_path(r"^api/schema/?$", SpectacularAPIView.as_view(), name="schema"),
    re_path(r"^api/docs/?$", ApiDocsView.as_view(url_name="schema"), name="api-docs"),
    path("api/mem0/", include((memory_urls.compat_urlpatterns, "mem0"), namespace="mem0")),
    path("api/", include("identity_app.api.urls")),
    path("api/", include(memory_urls.api_urlpatterns)),
    # mem0's clients call its paths at the host's root (docs/integrations.md).
    path("", include((memory_urls.compat_urlpatterns, "mem0-root"), namespace="mem0-root")),
    path("", include((memory_urls.web_urlpatterns, "web"), namespace="web")),
]
