from config.api import api_route
from memory_app.api import views_automemory as views

urlpatterns = [
    api_route(r"users/me/auto-memory-settings", views.AutoMemorySettingsView.as_view(), "auto-memory-settings"),
    api_route(r"tasks/(?P<run_id>[\w-]+)/auto-memory-flags", views.RunFlagsView.as_view(), "run-auto-memory-flags"),
    api_route(r"users/me/auto-memory/run", views.AutoMemoryRunView.as_view(), "auto-memory-run"),
    api_route(r"users/me/auto-memory-log", views.AutoMemoryLogView.as_view(), "auto-memory-log"),
]
