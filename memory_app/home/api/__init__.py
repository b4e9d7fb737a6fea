"""The memory home over REST (docs/home.md): the overview, one search, every item with its
provenance, correcting and forgetting (one, a selection, everything of a source), export and
import. Everything is about the caller (``/users/me/…``). One module per job; the routes here."""

from config.api.routes import api_route
from memory_app.home.api.forget import ForgetAllView, ForgetSelectedView, ForgetUndoView
from memory_app.home.api.items import HomeItemListView, HomeItemSupersedeView, HomeItemView, HomeReadsView
from memory_app.home.api.overview import HomeView
from memory_app.home.api.portability import ExportMarkdownView, ExportView, ImportView
from memory_app.home.api.search import HomeSearchView

MEM = r"(?P<memory_id>[\w-]+)"

urlpatterns = [
    api_route(r"users/me/memory-home", HomeView.as_view(), "memory-home"),
    api_route(r"users/me/memory-home/search", HomeSearchView.as_view(), "memory-home-search"),
    api_route(r"users/me/memory-home/items", HomeItemListView.as_view(), "memory-home-items"),
    api_route(rf"users/me/memory-home/items/{MEM}", HomeItemView.as_view(), "memory-home-item"),
    api_route(rf"users/me/memory-home/items/{MEM}/supersede", HomeItemSupersedeView.as_view(), "memory-home-correct"),
    api_route(r"users/me/memory-home/reads", HomeReadsView.as_view(), "memory-home-reads"),
    api_route(r"users/me/memory-home/forget", ForgetSelectedView.as_view(), "memory-home-forget"),
    api_route(r"users/me/memory-home/forget-all", ForgetAllView.as_view(), "memory-home-forget-all"),
    api_route(
        r"users/me/memory-home/forget-all/undo/(?P<undo_id>[\w-]+)", ForgetUndoView.as_view(), "memory-home-forget-undo"
    ),
    api_route(r"users/me/export", ExportView.as_view(), "my-export"),
    api_route(r"users/me/export/markdown", ExportMarkdownView.as_view(), "my-export-markdown"),
    api_route(r"users/me/import", ImportView.as_view(), "my-import"),
]
