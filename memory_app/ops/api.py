"""Job status over the API: ``GET /api/jobs/{id}`` (the caller's own jobs only)."""

from django.urls import reverse
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from config.api.routes import api_route
from config.http import AuthenticatedRequest
from memory_app.ops.models import BackgroundJob, JobStatus
from memory_app.ops.selectors import job_get


class JobErrorOutput(serializers.Serializer):
    code = serializers.CharField()
    message = serializers.CharField()


class JobOutput(serializers.ModelSerializer):
    status = serializers.ChoiceField(choices=JobStatus.choices)
    result = serializers.JSONField(allow_null=True, help_text="What the job did; null until it is done.")
    error = JobErrorOutput(allow_null=True, help_text="Why it failed; null unless failed.")
    status_url = serializers.SerializerMethodField()

    class Meta:
        model = BackgroundJob
        fields = ["id", "kind", "status", "created_at", "started_at", "finished_at", "result", "error", "status_url"]

    def get_status_url(self, job: BackgroundJob) -> str:
        return job_status_url(job)


def job_status_url(job: BackgroundJob) -> str:
    return reverse("job-detail", kwargs={"job_id": job.pk})


def job_accepted(job: BackgroundJob) -> Response:
    """202 for a queued job: its state, with the status URL in the body and ``Location``."""
    url = job_status_url(job)
    return Response(JobOutput(job).data, status=status.HTTP_202_ACCEPTED, headers={"Location": url})


class JobDetailView(APIView):
    @extend_schema(responses=JobOutput)
    def get(self, request: AuthenticatedRequest, job_id: str) -> Response:
        return Response(JobOutput(job_get(user=request.user, job_id=job_id)).data)


urlpatterns = [
    api_route(r"jobs/(?P<job_id>[\w-]{1,40})", JobDetailView.as_view(), "job-detail"),
]
