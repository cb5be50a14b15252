"""The kueue.x-k8s.io API: one source of truth for types, schemas, defaults and names."""
