"""An archive of sessions: discover them, ingest changed files, summarize a run."""
