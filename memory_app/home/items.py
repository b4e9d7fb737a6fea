"""A memory-home item as the API and the pages show it (``home_items``): its provenance, its
source and that source's title, and whether the reader may change it."""

from identity_app.models import Membership, User
from identity_app.permissions import CREATE_TASK, role_permissions
from memory_app.home.provenance import provenance_for
from memory_app.home.sources import chat_names, source_of, source_title
from memory_app.memories.models import Memory, Tier


def project_roles(*, user: User, project_ids) -> dict[str, str]:
    return dict(Membership.objects.filter(user=user, project_id__in=set(project_ids)).values_list("project_id", "role"))


def may_change(memory: Memory, *, roles: dict[str, str]) -> bool:
    """Whether the reader may forget it, and correct it unless ``may_correct`` says otherwise
    (the services decide; this is for showing the buttons): their own, their bound chats' and
    what was shared from them, and a project's with ``create_task``. Called on home items only."""
    if memory.scope_type == Tier.PROJECT:
        return CREATE_TASK in role_permissions(roles.get(memory.project_id or ""))
    return memory.scope_type in (Tier.USER, Tier.CHAT, Tier.GLOBAL)


def may_correct(memory: Memory, *, roles: dict[str, str]) -> bool:
    """An item shared with everyone from the reader's chat may be forgotten, not reworded."""
    return memory.scope_type != Tier.GLOBAL and may_change(memory, roles=roles)


def home_items(*, user: User, memories) -> list[Memory]:
    """Home items as the API and the pages show them: each memory (rows ``user`` may read) with
    its provenance (``prov``), its source (``source_key``) and that source's title (a bound chat
    by the name the user gave it: ``source_title``), and whether the reader may forget it
    (``can_change``) and correct it (``can_correct``). A fixed number of queries for the list."""
    memories = list(memories)
    prov = provenance_for(user=user, memories=memories)
    roles = project_roles(user=user, project_ids={m.project_id for m in memories if m.project_id})
    names = chat_names(user=user, keys={m.scope_id for m in memories if m.scope_type == Tier.CHAT})
    for memory in memories:
        source = source_of(memory)
        # The view fields, set on the instance beside the model's own.
        vars(memory).update(
            prov=prov[memory.pk],
            source_key=source.key,
            source_title=source_title(
                source, project_name=memory.project.name if memory.project else "", chat_names=names
            ),
            can_change=may_change(memory, roles=roles),
            can_correct=may_correct(memory, roles=roles),
        )
    return memories
