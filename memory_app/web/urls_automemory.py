from django.urls import path

from memory_app.web import views_automemory as views

urlpatterns = [
    path("auto-memory/settings/", views.auto_memory_settings, name="auto_memory_settings"),
    path("auto-memory/log/", views.auto_memory_log, name="auto_memory_log"),
    path("runs/<slug:run_id>/auto-memory/", views.run_auto_memory_flags, name="run_auto_memory_flags"),
]
