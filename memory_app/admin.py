"""Django admin for memories; each part of the product registers its models in its own module."""

from memory_app import admin_automemory, admin_runs, admin_scoped  # noqa: F401
