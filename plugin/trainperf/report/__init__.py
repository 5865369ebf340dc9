"""Reports of a run: terminal table, JSON run document."""
