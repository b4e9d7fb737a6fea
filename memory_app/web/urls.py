from django.urls import path

from identity_app.web import views as identity_views
from memory_app.web import views

urlpatterns = [
    path("", views.home, name="home"),
    path("memories/", views.my_memories, name="my_memories"),
    path("memories/<slug:memory_id>/", views.my_memory, name="my_memory"),
    path("memories/<slug:memory_id>/correct/", views.my_memory_correct, name="my_memory_correct"),
    path("memories/<slug:memory_id>/forget/", views.my_memory_forget, name="my_memory_forget"),
    path("projects/", views.projects, name="projects"),
    path("projects/<slug:project_id>/", views.project_memories, name="project_memories"),
    path("projects/<slug:project_id>/memories/<slug:memory_id>/", views.project_memory, name="project_memory"),
    path(
        "projects/<slug:project_id>/memories/<slug:memory_id>/correct/",
        views.project_memory_correct,
        name="project_memory_correct",
    ),
    path(
        "projects/<slug:project_id>/memories/<slug:memory_id>/forget/",
        views.project_memory_forget,
        name="project_memory_forget",
    ),
    path("profile/", identity_views.profile, name="profile"),
]

from memory_app.web import urls_automemory, urls_runs, urls_scoped  # noqa: E402

urlpatterns += urls_runs.urlpatterns + urls_automemory.urlpatterns + urls_scoped.urlpatterns
