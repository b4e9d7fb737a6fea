from drf_spectacular.utils import extend_schema
from rest_framework import generics, status
from rest_framework.response import Response
from rest_framework.views import APIView

from config.api import is_schema_generation
from identity_app import selectors, services
from identity_app.api.serializers import (
    MemberAddInput,
    MemberChangeInput,
    MemberOutput,
    ProfileInput,
    ProfileOutput,
    ProjectInput,
    ProjectOutput,
    ProjectUpdateInput,
)
from identity_app.models import Membership, Project
from identity_app.permissions import READ, project_require_permission


class ProfileView(APIView):
    @extend_schema(responses=ProfileOutput)
    def get(self, request):
        return Response(ProfileOutput(selectors.profile_get(user=request.user)).data)

    @extend_schema(request=ProfileInput, responses=ProfileOutput)
    def put(self, request):
        data = ProfileInput(data=request.data)
        data.is_valid(raise_exception=True)
        profile = services.profile_update(user=request.user, **data.validated_data)
        return Response(ProfileOutput(profile).data)


class ProjectListView(generics.ListAPIView):
    serializer_class = ProjectOutput

    def get_queryset(self):
        if is_schema_generation(self):
            return Project.objects.none()
        return selectors.projects_with_my_role(user=self.request.user)

    @extend_schema(request=ProjectInput, responses={201: ProjectOutput})
    def post(self, request):
        data = ProjectInput(data=request.data)
        data.is_valid(raise_exception=True)
        project = services.project_create(actor=request.user, **data.validated_data)
        project.my_role = "owner"
        return Response(ProjectOutput(project).data, status=status.HTTP_201_CREATED)


class ProjectDetailView(APIView):
    @extend_schema(responses=ProjectOutput)
    def get(self, request, project_id):
        project = project_require_permission(user=request.user, project_id=project_id, permission=READ)
        project.my_role = selectors.membership_role(user=request.user, project=project)
        return Response(ProjectOutput(project).data)

    @extend_schema(request=ProjectUpdateInput, responses=ProjectOutput)
    def put(self, request, project_id):
        data = ProjectUpdateInput(data=request.data)
        data.is_valid(raise_exception=True)
        project = services.project_update(actor=request.user, project_id=project_id, **data.validated_data)
        project.my_role = selectors.membership_role(user=request.user, project=project)
        return Response(ProjectOutput(project).data)

    patch = put


class MemberListView(generics.ListAPIView):
    serializer_class = MemberOutput

    def get_queryset(self):
        if is_schema_generation(self):
            return Membership.objects.none()
        project = project_require_permission(
            user=self.request.user, project_id=self.kwargs["project_id"], permission=READ
        )
        return selectors.project_members(project=project)

    @extend_schema(request=MemberAddInput, responses={201: MemberOutput})
    def post(self, request, project_id):
        data = MemberAddInput(data=request.data)
        data.is_valid(raise_exception=True)
        membership = services.membership_add(actor=request.user, project_id=project_id, **data.validated_data)
        return Response(MemberOutput(membership).data, status=status.HTTP_201_CREATED)


class MemberDetailView(APIView):
    @extend_schema(request=MemberChangeInput, responses=MemberOutput)
    def put(self, request, project_id, user_id):
        data = MemberChangeInput(data=request.data)
        data.is_valid(raise_exception=True)
        membership = services.membership_change(
            actor=request.user, project_id=project_id, user_id=int(user_id), **data.validated_data
        )
        return Response(MemberOutput(membership).data)

    patch = put

    @extend_schema(responses={204: None})
    def delete(self, request, project_id, user_id):
        services.membership_remove(actor=request.user, project_id=project_id, user_id=int(user_id))
        return Response(status=status.HTTP_204_NO_CONTENT)
