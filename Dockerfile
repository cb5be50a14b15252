# One image, two programs: the chart runs `pykueue-webhook` or `pykueue-controller` as the command.
#
# The builder turns the pinned dependencies (hack/requirements.lock, regenerated with
# hack/lock-requirements.sh) and pykueue itself into wheels and installs them into a virtualenv at
# /opt/pykueue. The runtime stage copies only that virtualenv onto the same slim base, so no
# compiler, pip cache or source tree ships. It runs as an unprivileged numeric user (Kubernetes can
# verify runAsNonRoot only for numeric users) and writes nothing outside the emptyDir volumes the
# chart mounts, so it works with a read-only root filesystem.
#
# Only the syntax of Docker's built-in Dockerfile frontend is used (no `# syntax=` line), so a
# build pulls no frontend image: hack/build-images.sh builds it with no registry at all, on a
# Python base made from Debian packages (PYTHON_IMAGE). A CA bundle pip needs to reach PyPI (a
# TLS-inspecting proxy) is passed as the BuildKit secret `pip-ca`; it is mounted for the pip steps
# only and stored in no layer.
ARG PYTHON_IMAGE=python:3.11-slim-bookworm

FROM ${PYTHON_IMAGE} AS builder
ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1
WORKDIR /src
# Dependencies first: this layer is reused until the lock file changes. Every wheel must match a
# sha256 in the lock (--require-hashes), and none may be built from source (--only-binary).
COPY hack/requirements.lock hack/requirements.lock
RUN --mount=type=secret,id=pip-ca \
    if [ -f /run/secrets/pip-ca ]; then export PIP_CERT=/run/secrets/pip-ca; fi; \
    python -m pip wheel --require-hashes --only-binary=:all: --wheel-dir /wheels -r hack/requirements.lock
COPY pyproject.toml README.md ./
COPY pykueue ./pykueue
COPY webhook ./webhook
COPY controller ./controller
# Building pykueue's own wheel fetches its build backend (setuptools) from PyPI too.
RUN --mount=type=secret,id=pip-ca \
    if [ -f /run/secrets/pip-ca ]; then export PIP_CERT=/run/secrets/pip-ca; fi; \
    python -m pip wheel --no-deps --wheel-dir /wheels .
# Exactly the wheels above, nothing resolved again; `pip check` proves the set is complete.
RUN python -m venv --without-pip /opt/pykueue \
    && python -m pip --python /opt/pykueue/bin/python install --no-index --no-deps /wheels/*.whl \
    && python -m pip --python /opt/pykueue/bin/python check \
    && /opt/pykueue/bin/python -m compileall -q /opt/pykueue/lib

FROM ${PYTHON_IMAGE}
LABEL org.opencontainers.image.title="pykueue" \
      org.opencontainers.image.description="Kueue-compatible job queueing: admission webhook and controller" \
      org.opencontainers.image.licenses="Apache-2.0"
# The runtime needs no package manager either: pip goes, and so do the means to bootstrap it
# again (ensurepip in the official image's layout; Debian's bundled wheels in Debian's).
RUN python -m pip uninstall -y -q pip setuptools wheel 2>/dev/null; \
    rm -rf /root/.cache /usr/local/lib/python3.11/ensurepip /usr/lib/python3.11/ensurepip /usr/share/python-wheels
COPY --from=builder /opt/pykueue /opt/pykueue
# /tmp is the only writable path in the pods (an emptyDir); HOME points there too because the
# numeric user has no home directory and gunicorn keeps its control socket under $HOME.
ENV PATH=/opt/pykueue/bin:${PATH} \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    TMPDIR=/tmp \
    HOME=/tmp
USER 65532:65532
WORKDIR /tmp
EXPOSE 9443 8080 8081
CMD ["pykueue-controller"]
