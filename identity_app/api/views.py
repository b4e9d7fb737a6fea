from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, cast

from django.db.models import QuerySet
from drf_spectacular.utils import extend_schema
from rest_framework import generics, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from config.api.inputs import validated
from config.api.schema import is_schema_generation
from config.http import AuthenticatedRequest
from identity_app import selectors, services
from identity_app.api.serializers import (
    InvitationAcceptedOutput,
    MemberAddInput,
    MemberChangeInput,
    MemberInvitedOutput,
    MemberOutput,
    MyInvitationOutput,
    ProfileInput,
    ProfileOutput,
    ProjectInput,
    ProjectInvitationOutput,
    ProjectOutput,
    ProjectUpdateInput,
    TokenCreateInput,
    TokenIssuedOutput,
    TokenOutput,
)
from identity_app.filters import ProjectFilter
from identity_app.models import ApiToken, Invitation, Membership, Project
from identity_app.permissions import READ, project_require_permission

if TYPE_CHECKING:
    from django_stubs_ext import WithAnnotations


class ProfileView(APIView):
    @extend_schema(responses=ProfileOutput)
    def get(self, request: AuthenticatedRequest) -> Response:
        return Response(ProfileOutput(selectors.profile_get(user=request.user)).data)

    @extend_schema(request=ProfileInput, responses=ProfileOutput)
    def put(self, request: AuthenticatedRequest) -> Response:
        data = ProfileInput(data=request.data)
        data.is_valid(raise_exception=True)
        profile = services.profile_update(user=request.user, **data.validated_data)
        return Response(ProfileOutput(profile).data)


def _with_my_role(project: Project, role: str | None) -> None:
    """Give ``project`` the ``my_role`` that ``projects_with_my_role`` reads, for ProjectOutput."""
    cast("WithAnnotations[Project, selectors.MyRole]", project).my_role = role


class ProjectListView(generics.ListAPIView):
    request: AuthenticatedRequest  # IsAuthenticated, the default permission
    serializer_class = ProjectOutput
    filterset_class = ProjectFilter

    def get_queryset(self) -> QuerySet[Project]:
        if is_schema_generation(self):
            return Project.objects.none()
        return selectors.projects_with_my_role(user=self.request.user)

    @extend_schema(request=ProjectInput, responses={201: ProjectOutput})
    def post(self, request: AuthenticatedRequest) -> Response:
        data = ProjectInput(data=request.data)
        data.is_valid(raise_exception=True)
        project = services.project_create(actor=request.user, **data.validated_data)
        _with_my_role(project, "owner")
        return Response(ProjectOutput(project).data, status=status.HTTP_201_CREATED)


class ProjectDetailView(APIView):
    @extend_schema(responses=ProjectOutput)
    def get(self, request: AuthenticatedRequest, project_id: str) -> Response:
        project = project_require_permission(user=request.user, project_id=project_id, permission=READ)
        _with_my_role(project, selectors.membership_role(user=request.user, project=project))
        return Response(ProjectOutput(project).data)

    @extend_schema(request=ProjectUpdateInput, responses=ProjectOutput)
    def put(self, request: AuthenticatedRequest, project_id: str) -> Response:
        data = ProjectUpdateInput(data=request.data)
        data.is_valid(raise_exception=True)
        project = services.project_update(actor=request.user, project_id=project_id, **data.validated_data)
        _with_my_role(project, selectors.membership_role(user=request.user, project=project))
        return Response(ProjectOutput(project).data)

    patch = put


# The answer to an invitation, whatever the username: existing or not, member or not.
INVITED = {
    "status": "invited",
    "message": "If an account with this username exists and is not a member yet, it has been invited; "
    "it joins the project when it accepts.",
}


class MemberListView(generics.ListAPIView):
    request: AuthenticatedRequest  # IsAuthenticated, the default permission
    serializer_class = MemberOutput

    def get_queryset(self) -> QuerySet[Membership]:
        if is_schema_generation(self):
            return Membership.objects.none()
        project = project_require_permission(
            user=self.request.user, project_id=self.kwargs["project_id"], permission=READ
        )
        return selectors.project_members(project=project)

    @extend_schema(request=MemberAddInput, responses={202: MemberInvitedOutput})
    def post(self, request: AuthenticatedRequest, project_id: str) -> Response:
        """Invite a user; they become a member when they accept. The answer is the same
        whether or not the username exists."""
        services.invitation_create(actor=request.user, project_id=project_id, **validated(MemberAddInput, request))
        return Response(INVITED, status=status.HTTP_202_ACCEPTED)


class MemberDetailView(APIView):
    @extend_schema(request=MemberChangeInput, responses=MemberOutput)
    def put(self, request: AuthenticatedRequest, project_id: str, user_id: str) -> Response:
        data = MemberChangeInput(data=request.data)
        data.is_valid(raise_exception=True)
        membership = services.membership_change(
            actor=request.user, project_id=project_id, user_id=int(user_id), **data.validated_data
        )
        return Response(MemberOutput(membership).data)

    patch = put

    @extend_schema(responses={204: None})
    def delete(self, request: AuthenticatedRequest, project_id: str, user_id: str) -> Response:
        services.membership_remove(actor=request.user, project_id=project_id, user_id=int(user_id))
        return Response(status=status.HTTP_204_NO_CONTENT)


class ProjectInvitationListView(generics.ListAPIView):
    request: AuthenticatedRequest  # IsAuthenticated, the default permission
    serializer_class = ProjectInvitationOutput

    def get_queryset(self) -> QuerySet[Invitation]:
        if is_schema_generation(self):
            return Invitation.objects.none()
        return selectors.project_invitations(user=self.request.user, project_id=self.kwargs["project_id"])


class ProjectInvitationDetailView(APIView):
    @extend_schema(responses={204: None})
    def delete(self, request: AuthenticatedRequest, project_id: str, invitation_id: str) -> Response:
        services.invitation_cancel(actor=request.user, project_id=project_id, invitation_id=invitation_id)
        return Response(status=status.HTTP_204_NO_CONTENT)


class MyInvitationListView(generics.ListAPIView):
    request: AuthenticatedRequest  # IsAuthenticated, the default permission
    serializer_class = MyInvitationOutput

    def get_queryset(self) -> QuerySet[Invitation]:
        if is_schema_generation(self):
            return Invitation.objects.none()
        return selectors.invitations_pending_for(user=self.request.user)


class MyInvitationAcceptView(APIView):
    @extend_schema(request=None, responses={201: InvitationAcceptedOutput})
    def post(self, request: AuthenticatedRequest, invitation_id: str) -> Response:
        membership = services.invitation_accept(actor=request.user, invitation_id=invitation_id)
        return Response(InvitationAcceptedOutput(membership).data, status=status.HTTP_201_CREATED)


class MyInvitationDeclineView(APIView):
    @extend_schema(request=None, responses={204: None})
    def post(self, request: AuthenticatedRequest, invitation_id: str) -> Response:
        services.invitation_decline(actor=request.user, invitation_id=invitation_id)
        return Response(status=status.HTTP_204_NO_CONTENT)


def _token_context(tokens: Iterable[ApiToken]) -> dict[str, Any]:
    user_ids = {user_id for token in tokens for user_id in token.only_user_ids or ()}
    return {"usernames": selectors.usernames_by_id(user_ids) if user_ids else {}}


def _issued(token: ApiToken, key: str) -> Response:
    body = TokenIssuedOutput(token, context={**_token_context([token]), "key": key}).data
    return Response(body, status=status.HTTP_201_CREATED, headers={"Cache-Control": "no-store"})


class MyTokenListView(generics.ListAPIView):
    request: AuthenticatedRequest  # IsAuthenticated, the default permission
    serializer_class = TokenOutput

    def get_queryset(self) -> QuerySet[ApiToken]:
        if is_schema_generation(self):
            return ApiToken.objects.none()
        return selectors.tokens_visible(user=self.request.user)

    def list(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        page = self.paginate_queryset(self.get_queryset())
        assert page is not None  # the view has a pagination class
        return self.get_paginated_response(TokenOutput(page, many=True, context=_token_context(page)).data)

    @extend_schema(request=TokenCreateInput, responses={201: TokenIssuedOutput})
    def post(self, request: AuthenticatedRequest) -> Response:
        data = validated(TokenCreateInput, request)
        return _issued(*services.token_create(actor=request.user, **data))


class MyTokenDetailView(APIView):
    @extend_schema(responses=TokenOutput)
    def get(self, request: AuthenticatedRequest, token_id: str) -> Response:
        token = selectors.token_get(user=request.user, token_id=token_id)
        return Response(TokenOutput(token, context=_token_context([token])).data)

    @extend_schema(responses={204: None})
    def delete(self, request: AuthenticatedRequest, token_id: str) -> Response:
        """Revoke the token (it stays listed, as revoked)."""
        services.token_revoke(actor=request.user, token_id=token_id)
        return Response(status=status.HTTP_204_NO_CONTENT)


class MyTokenRotateView(APIView):
    @extend_schema(request=None, responses={201: TokenIssuedOutput})
    def post(self, request: AuthenticatedRequest, token_id: str) -> Response:
        """A new key with the same name, limits and lifetime; the old one is revoked."""
        return _issued(*services.token_rotate(actor=request.user, token_id=token_id))
