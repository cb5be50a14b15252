"""The webhook's certificate Secret and files: the shared implementation lives in
:mod:`pykueue.tls.provision` (the controller's visibility API provisions its own the same way)."""

from pykueue.tls.provision import (  # noqa: F401
    ROTATION_ANNOTATION,
    CertFiles,
    CertProvisioner,
    decode_secret_data,
    encode_secret_data,
    write_atomically,
)
