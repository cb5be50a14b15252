"""The webhook's certificates: the shared implementation lives in :mod:`pykueue.tls.certs`."""

from pykueue.tls.certs import *  # noqa: F403
from pykueue.tls.certs import (  # noqa: F401  (names without __all__ re-exported explicitly)
    BACKDATE,
    CA_CERT_KEY,
    CA_KEY_KEY,
    DEFAULT_VALIDITY,
    MAX_PREVIOUS_CAS,
    ROTATE_AT_FRACTION,
    SECRET_KEYS,
    TLS_CERT_KEY,
    TLS_KEY_KEY,
    CertBundle,
    covers_names,
    generate_bundle,
    load_cert,
    merge_ca_bundle,
    rotation_due,
    service_dns_names,
    split_pem_certificates,
)
