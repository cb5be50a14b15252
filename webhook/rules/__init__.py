"""Semantic admission rules per kind, on plain JSON dicts; each returns a list of FieldError."""
