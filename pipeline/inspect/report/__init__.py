"""Self-contained HTML reports of one fit or of a whole archive."""
