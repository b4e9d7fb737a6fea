from django.urls import path

from memory_app.web import views_runs

urlpatterns = [
    path("workspace/", views_runs.workspace, name="workspace"),
    path("settings/", views_runs.settings_page, name="settings"),
    path("conversations/", views_runs.conversation_list, name="conversations"),
    path("conversations/<slug:conversation_id>/", views_runs.conversation_detail, name="conversation_detail"),
    path("runs/<slug:run_id>/", views_runs.run_detail, name="run_detail"),
]
