"""What every page's header needs: which part of the site the page belongs to (so the header
marks it) and how many invitations wait for the signed-in user (one bounded count)."""

from typing import Any

from django.http import HttpRequest

from identity_app.selectors import invitations_pending_for

MAX_BADGE = 99  # the badge says "99+" beyond this; the count never scans more rows

# The header's sections by the first segment of the path; the home (/) is the memory section.
SECTIONS = {
    "memory": "memory",
    "memories": "memory",
    "workspace": "memory",
    "chats": "memory",
    "projects": "projects",
    "conversations": "conversations",
    "runs": "conversations",
    "settings": "settings",
    "auto-memory": "settings",
    "profile": "account",
    "tokens": "account",
    "invitations": "account",
    "account": "account",
}


def navigation(request: HttpRequest) -> dict[str, Any]:
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated:
        return {}
    first = request.path.strip("/").split("/", 1)[0]
    section = "memory" if not first else SECTIONS.get(first, "")
    if first == "projects" and request.path.rstrip("/").endswith("/members"):
        section = "projects"
    pending = invitations_pending_for(user=user).order_by()[: MAX_BADGE + 1].count()
    return {"nav_section": section, "nav_invitations": pending, "nav_invitations_more": pending > MAX_BADGE}
