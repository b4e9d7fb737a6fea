from django.urls import path

from memory_app.web import views

urlpatterns = [
    path("", views.home, name="home"),
]

from memory_app.web import urls_automemory, urls_runs, urls_scoped  # noqa: E402

urlpatterns += urls_runs.urlpatterns + urls_automemory.urlpatterns + urls_scoped.urlpatterns
