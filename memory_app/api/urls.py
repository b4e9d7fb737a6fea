from config.api import api_route
from memory_app.api import views

MEM = r"(?P<memory_id>[\w-]+)"
PRJ = r"(?P<project_id>[\w-]+)"

urlpatterns = [
    api_route(r"users/me/memories", views.MyMemoryListView.as_view(), "my-memories"),
    api_route(rf"users/me/memories/{MEM}", views.MyMemoryDetailView.as_view(), "my-memory-detail"),
    api_route(rf"users/me/memories/{MEM}/supersede", views.MyMemorySupersedeView.as_view(), "my-memory-supersede"),
    api_route(rf"users/me/memories/{MEM}/chain", views.MyMemoryChainView.as_view(), "my-memory-chain"),
    api_route(r"users/me/identity-context", views.IdentityContextView.as_view(), "identity-context"),
    api_route(rf"projects/{PRJ}/identity-memories", views.ProjectMemoryListView.as_view(), "project-memories"),
    api_route(
        rf"projects/{PRJ}/identity-memories/{MEM}", views.ProjectMemoryDetailView.as_view(), "project-memory-detail"
    ),
    api_route(
        rf"projects/{PRJ}/identity-memories/{MEM}/supersede",
        views.ProjectMemorySupersedeView.as_view(),
        "project-memory-supersede",
    ),
    api_route(
        rf"projects/{PRJ}/identity-memories/{MEM}/chain", views.ProjectMemoryChainView.as_view(), "project-memory-chain"
    ),
]

# Each part of the product keeps its own routes.
from memory_app.api import urls_automemory, urls_runs, urls_scoped  # noqa: E402

urlpatterns += urls_runs.urlpatterns + urls_automemory.urlpatterns + urls_scoped.urlpatterns
