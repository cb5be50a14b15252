"""Self-provisioned serving certificates shared by the webhook and the controller's aggregated API.

Both programs are called by the apiserver over TLS it verifies against a ``caBundle`` pykueue
publishes (the webhook configurations, the visibility ``APIService``), so both make and rotate
their certificates the same way: :mod:`pykueue.tls.certs` (pure: generate, judge, merge bundles)
and :mod:`pykueue.tls.provision` (a Secret shared by replicas, files on disk, the bundle synced).
"""
