"""Models of the scoped part (see its issue)."""

__all__: list[str] = []
