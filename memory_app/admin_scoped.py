"""Admin of the scoped part."""
