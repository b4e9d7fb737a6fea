from config.api import api_route
from memory_app.api import views_runs as views

RUN = r"(?P<run_id>[\w-]+)"
CONV = r"(?P<conversation_id>[\w-]+)"

urlpatterns = [
    api_route(r"users/me/settings", views.SettingsView.as_view(), "my-settings"),
    # Any single path segment reaches the view, which accepts only the three file names.
    api_route(r"users/me/workspace/(?P<name>[^/]+)", views.WorkspaceFileView.as_view(), "my-workspace-file"),
    api_route(r"conversations", views.ConversationListView.as_view(), "conversations"),
    api_route(rf"conversations/{CONV}", views.ConversationDetailView.as_view(), "conversation-detail"),
    api_route(rf"conversations/{CONV}/messages", views.MessageListView.as_view(), "conversation-messages"),
    api_route(rf"conversations/{CONV}/messages/(?P<message_id>[0-9]{{1,18}})", views.MessageDetailView.as_view(), "conversation-message"),
    api_route(r"runs", views.RunListView.as_view(), "runs"),
    api_route(rf"runs/{RUN}", views.RunDetailView.as_view(), "run-detail"),
    api_route(rf"runs/{RUN}/claim", views.RunClaimView.as_view(), "run-claim"),
    api_route(rf"runs/{RUN}/heartbeat", views.RunHeartbeatView.as_view(), "run-heartbeat"),
    api_route(rf"runs/{RUN}/finish", views.RunFinishView.as_view(), "run-finish"),
    api_route(rf"runs/{RUN}/context", views.RunContextView.as_view(), "run-context"),
    api_route(rf"runs/{RUN}/tools/(?P<tool>[\w-]+)", views.RunToolView.as_view(), "run-tool"),
]
