"""The memory home pages (docs/home.md): the overview at the site root with one search, a
source's items with bulk forget, an item with its provenance and chain, correct and forget,
forget everything with a typed confirmation, export and import. Thin: the same reads and
services as the API.

One module per job: ``browse`` (the overview, a source's items, an item, reads), ``change``
(correct, change in place), ``forget`` and ``portability`` (export, import); the routes here.
"""

from django.urls import path

from memory_app.home.web.browse import item_detail, memory_home, reads_page, source_items
from memory_app.home.web.change import item_change, item_correct
from memory_app.home.web.forget import forget_all, forget_selected, forget_undo, item_forget
from memory_app.home.web.portability import export, import_page

urlpatterns = [
    path("", memory_home, name="home"),
    path("memory/items/", source_items, name="memory_home_items"),
    path("memory/items/<slug:memory_id>/", item_detail, name="memory_home_item"),
    path("memory/items/<slug:memory_id>/correct/", item_correct, name="memory_home_item_correct"),
    path("memory/items/<slug:memory_id>/change/", item_change, name="memory_home_item_change"),
    path("memory/items/<slug:memory_id>/forget/", item_forget, name="memory_home_item_forget"),
    path("memory/reads/", reads_page, name="memory_home_reads"),
    path("memory/forget/", forget_selected, name="memory_home_forget_selected"),
    path("memory/forget-all/", forget_all, name="memory_home_forget_all"),
    path("memory/forget-all/undo/<slug:undo_id>/", forget_undo, name="memory_home_forget_undo"),
    path("memory/export/", export, name="memory_home_export"),
    path("memory/import/", import_page, name="memory_home_import"),
]
