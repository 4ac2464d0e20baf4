"""Session stores: SQLite persistence, resume-time trimming/expiry, and pruning of noise."""
