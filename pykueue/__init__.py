"""pykueue: the shared API (types, schemas, constants) and Kubernetes access used by both programs."""
