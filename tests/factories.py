import factory
from django.contrib.auth import get_user_model

from identity_app.models import Membership, Profile, Project, Role
from memory_app.memories.models import Kind, Memory, Origin, Tier


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


class UserMemoryFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Memory

    scope_type = Tier.USER
    owner = factory.SubFactory(UserFactory)
    scope_id = factory.LazyAttribute(lambda m: str(m.owner.pk))
    kind = Kind.PREFERENCE
    content = factory.Sequence(lambda n: f"user memory {n}")
    origin = Origin.API


class ProjectMemoryFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Memory

    scope_type = Tier.PROJECT
    project = factory.SubFactory(ProjectFactory)
    scope_id = factory.LazyAttribute(lambda m: m.project.pk)
    kind = Kind.DECISION
    content = factory.Sequence(lambda n: f"project memory {n}")
    origin = Origin.API
