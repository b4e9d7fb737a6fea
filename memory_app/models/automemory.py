"""Models of the automemory part (see its issue)."""

__all__: list[str] = []
