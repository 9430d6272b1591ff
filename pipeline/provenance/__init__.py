"""Provenance: hashing (canonical JSON, file and tree digests) and fit fingerprints."""
