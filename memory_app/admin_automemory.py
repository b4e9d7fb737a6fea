"""Admin of the automemory part."""
