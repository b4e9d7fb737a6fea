from django.urls import path

from memory_app.web import views_scoped

urlpatterns = [
    path("chats/", views_scoped.chat_memories, name="chat_memories"),
]
