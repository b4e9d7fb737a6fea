from config.api.routes import api_route
from identity_app.api import views

urlpatterns = [
    api_route(r"users/me/profile", views.ProfileView.as_view(), "profile"),
    api_route(r"projects", views.ProjectListView.as_view(), "project-list"),
    api_route(r"projects/(?P<project_id>[\w-]+)", views.ProjectDetailView.as_view(), "project-detail"),
    api_route(r"projects/(?P<project_id>[\w-]+)/members", views.MemberListView.as_view(), "project-members"),
    api_route(
        r"projects/(?P<project_id>[\w-]+)/members/(?P<user_id>[0-9]{1,18})",
        views.MemberDetailView.as_view(),
        "project-member-detail",
    ),
    api_route(
        r"projects/(?P<project_id>[\w-]+)/invitations", views.ProjectInvitationListView.as_view(), "project-invitations"
    ),
    api_route(
        r"projects/(?P<project_id>[\w-]+)/invitations/(?P<invitation_id>[\w-]+)",
        views.ProjectInvitationDetailView.as_view(),
        "project-invitation-detail",
    ),
    api_route(r"users/me/invitations", views.MyInvitationListView.as_view(), "my-invitations"),
    api_route(
        r"users/me/invitations/(?P<invitation_id>[\w-]+)/accept",
        views.MyInvitationAcceptView.as_view(),
        "my-invitation-accept",
    ),
    api_route(
        r"users/me/invitations/(?P<invitation_id>[\w-]+)/decline",
        views.MyInvitationDeclineView.as_view(),
        "my-invitation-decline",
    ),
    api_route(r"users/me/tokens", views.MyTokenListView.as_view(), "my-tokens"),
    api_route(r"users/me/tokens/(?P<token_id>[0-9]{1,18})", views.MyTokenDetailView.as_view(), "my-token-detail"),
    api_route(
        r"users/me/tokens/(?P<token_id>[0-9]{1,18})/rotate", views.MyTokenRotateView.as_view(), "my-token-rotate"
    ),
]
