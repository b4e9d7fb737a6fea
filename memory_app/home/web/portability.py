"""Export the home (JSON or Markdown) and import an export."""

from django import forms
from django.contrib.auth.decorators import login_required
from django.http import HttpResponse, JsonResponse
from django.shortcuts import render
from django.utils import timezone
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from django.views.decorators.http import require_http_methods

from config.errors import DomainError, InvalidInput
from config.http import AuthenticatedHttpRequest
from memory_app.home import services
from memory_app.home.errors import ErrorCode
from memory_app.home.export import home_export
from memory_app.home.markdown import export_markdown
from memory_app.memories.models import Origin


@login_required
@require_http_methods(["GET"])
def export(request: AuthenticatedHttpRequest):
    data = home_export(user=request.user, now=timezone.now())
    stamp = timezone.now().strftime("%Y%m%d-%H%M")
    if request.GET.get("as") == "markdown":
        response = HttpResponse(export_markdown(data), content_type="text/markdown; charset=utf-8")
        response["Content-Disposition"] = f'attachment; filename="memory-export-{stamp}.md"'
        return response
    response = JsonResponse(data, json_dumps_params={"ensure_ascii": False, "indent": 1})
    response["Content-Disposition"] = f'attachment; filename="memory-export-{stamp}.json"'
    return response


class ImportForm(forms.Form):
    file = forms.FileField(label=gettext_lazy("Export file (JSON)"))


@login_required
@require_http_methods(["GET", "POST"])
def import_page(request: AuthenticatedHttpRequest):
    form = ImportForm(request.POST or None, request.FILES or None)
    status, report = 200, None
    if request.method == "POST":
        if form.is_valid():
            upload = form.cleaned_data["file"]
            try:
                if upload.size > services.MAX_IMPORT_BYTES:
                    raise InvalidInput(
                        _("The file is larger than %(n)s bytes.") % {"n": services.MAX_IMPORT_BYTES},
                        code=ErrorCode.TOO_LARGE,
                    )
                data = services.import_parse(upload.read(services.MAX_IMPORT_BYTES + 1))
                report = services.home_import(actor=request.user, data=data, origin=Origin.MANUAL)
            except DomainError as exc:
                form.add_error("file", exc.message)
                status = exc.status_code
        else:
            status = 400
    return render(request, "home/import.html", {"form": form, "report": report}, status=status)
