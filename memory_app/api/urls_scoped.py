from config.api import api_route
from memory_app.api import views_scoped as views

urlpatterns = [
    api_route(r"memory/items", views.ItemCreateView.as_view(), "memory-items"),
    api_route(r"memory/search", views.SearchView.as_view(), "memory-search"),
    api_route(r"memory/consolidate", views.ConsolidateView.as_view(), "memory-consolidate"),
    api_route(r"chat-bindings", views.ChatBindingListView.as_view(), "chat-bindings"),
    api_route(r"chat-bindings/(?P<binding_id>[0-9]{1,18})", views.ChatBindingDetailView.as_view(), "chat-binding-detail"),
]
