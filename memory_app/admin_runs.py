"""Admin of the runs part."""
