"""Every factory_boy factory of the suite, one per kind of row. Defaults are the plain row a
service would create; tests name only the fields their behaviour depends on."""

from datetime import timedelta

import factory
from django.contrib.auth import get_user_model
from django.utils import timezone

from identity_app.models import ChatBinding, Membership, Profile, Project, Role
from memory_app.memories import derived
from memory_app.memories.models import GLOBAL_SCOPE_ID, Kind, Memory, Origin, ProjectSummary, Tier
from memory_app.runs.models import AgentRun, RunKind, RunStatus
from memory_app.scoped.models import CandidateDecision, MemoryCandidate
from memory_app.threads import indexing
from memory_app.threads.models import Conversation, Message, MessageRole, MessageType

# --- identity ------------------------------------------------------------------------------


class UserFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = get_user_model()
        django_get_or_create = ("username",)

    username = factory.Sequence(lambda n: f"user{n}")
    password = factory.django.Password("pw-for-tests-123")


class ProfileFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Profile
        django_get_or_create = ("user",)

    user = factory.SubFactory(UserFactory)


class ProjectFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Project

    name = factory.Sequence(lambda n: f"Project {n}")


class MembershipFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Membership

    project = factory.SubFactory(ProjectFactory)
    user = factory.SubFactory(UserFactory)
    role = Role.MEMBER


class ChatBindingFactory(factory.django.DjangoModelFactory):
    """A private chat address bound to a user."""

    class Meta:
        model = ChatBinding

    chat_key = factory.Sequence(lambda n: f"milky:private:{90000 + n}")
    user = factory.SubFactory(UserFactory)


# --- memories (one factory per tier) -------------------------------------------------------


class _IndexedMemoryFactory(factory.django.DjangoModelFactory):
    """Rows are indexed for search as the memory services would do."""

    class Meta:
        abstract = True

    @classmethod
    def _create(cls, model_class, *args, **kwargs):
        memory = super()._create(model_class, *args, **kwargs)
        derived.on_memories_written(created=[memory])
        return memory


class UserMemoryFactory(_IndexedMemoryFactory):
    class Meta:
        model = Memory

    scope_type = Tier.USER
    owner = factory.SubFactory(UserFactory)
    scope_id = factory.LazyAttribute(lambda m: str(m.owner.pk))
    kind = Kind.PREFERENCE
    content = factory.Sequence(lambda n: f"user memory {n}")
    origin = Origin.API


class ProjectMemoryFactory(_IndexedMemoryFactory):
    class Meta:
        model = Memory

    scope_type = Tier.PROJECT
    project = factory.SubFactory(ProjectFactory)
    scope_id = factory.LazyAttribute(lambda m: m.project.pk)
    kind = Kind.DECISION
    content = factory.Sequence(lambda n: f"project memory {n}")
    origin = Origin.API


class ChatMemoryFactory(_IndexedMemoryFactory):
    """A scoped item of one chat (no owner, no project)."""

    class Meta:
        model = Memory

    scope_type = Tier.CHAT
    scope_id = factory.Sequence(lambda n: f"milky:private:{80000 + n}")
    kind = Kind.PREFERENCE
    content = factory.Sequence(lambda n: f"chat memory {n}")
    origin = Origin.API


class GlobalMemoryFactory(_IndexedMemoryFactory):
    """A scoped item of the one global scope."""

    class Meta:
        model = Memory

    scope_type = Tier.GLOBAL
    scope_id = GLOBAL_SCOPE_ID
    kind = Kind.PROCEDURE
    content = factory.Sequence(lambda n: f"global memory {n}")
    origin = Origin.API


class ProjectSummaryFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = ProjectSummary

    project = factory.SubFactory(ProjectFactory)
    title = factory.Sequence(lambda n: f"Summary {n}")
    content = "Work in progress."


class MemoryCandidateFactory(factory.django.DjangoModelFactory):
    """What one consolidation or dreaming pass proposed, and what became of it."""

    class Meta:
        model = MemoryCandidate

    session_id = "milky:private:10001"
    source = "consolidate"
    extractor = "deterministic"
    scope_type = factory.LazyAttribute(lambda c: c.memory.scope_type if c.memory else Tier.CHAT)
    scope_id = factory.LazyAttribute(lambda c: c.memory.scope_id if c.memory else c.session_id)
    kind = Kind.PREFERENCE
    content = factory.LazyAttribute(lambda c: c.memory.content if c.memory else "I like tea")
    decision = CandidateDecision.CREATED
    memory = None


# --- agent: conversations, messages, runs --------------------------------------------------


class ConversationFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Conversation

    owner = factory.SubFactory(UserFactory)
    title = factory.Sequence(lambda n: f"thread {n}")


class AgentRunFactory(factory.django.DjangoModelFactory):
    """A run as the runs API creates it: queued, in a new conversation of its user."""

    class Meta:
        model = AgentRun

    user = factory.SubFactory(UserFactory)
    conversation = factory.LazyAttribute(lambda r: ConversationFactory(owner=r.user, project=r.project))
    project = None
    request_id = factory.Sequence(lambda n: f"req-{n}")
    kind = RunKind.CHAT


class CompletedRunFactory(AgentRunFactory):
    """A completed top-level run that finished an hour ago after ten minutes."""

    status = RunStatus.COMPLETED
    prompt = "Help me with the billing service."
    finished_at = factory.LazyFunction(lambda: timezone.now() - timedelta(hours=1))
    started_at = factory.LazyAttribute(lambda r: r.finished_at - timedelta(minutes=10))
    usage = factory.LazyFunction(lambda: {"duration_s": 600, "quota_remaining_pct": 80})


class MessageFactory(factory.django.DjangoModelFactory):
    """A text message; in its run's conversation when it belongs to a run."""

    class Meta:
        model = Message

    run = None
    conversation = factory.Maybe(
        "run",
        yes_declaration=factory.LazyAttribute(lambda m: m.run.conversation),
        no_declaration=factory.SubFactory(ConversationFactory),
    )
    role = MessageRole.USER
    type = MessageType.TEXT
    content = "hello"

    @classmethod
    def _create(cls, model_class, *args, **kwargs):
        message = super()._create(model_class, *args, **kwargs)
        indexing.on_message_created(message, message.conversation)  # as message_create does
        return message
