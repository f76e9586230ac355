# perfbot's GitHub App service (`perfbot serve`) as a small image.
#
#   docker build -t perfbot .
#   docker run --env-file .env ... perfbot        (docs/operators/docker.md)
#
# Credentials come from the environment at run time, never from the image.

# One base for both stages: the virtual environment is built for the same interpreter path.
ARG PYTHON_IMAGE=python:3.11.14-slim-bookworm

FROM ${PYTHON_IMAGE} AS builder
ENV PIP_DISABLE_PIP_VERSION_CHECK=1
WORKDIR /src
RUN python -m venv /opt/perfbot
# Only what the package needs: the build context's .env, keys and databases never enter it.
COPY pyproject.toml README.md ./
COPY perfbot ./perfbot
# The App is perfbot's base install; the postgres extra lets one image serve either store.
RUN /opt/perfbot/bin/pip install --no-cache-dir '.[postgres]'

FROM ${PYTHON_IMAGE}
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PATH=/opt/perfbot/bin:$PATH
# A fixed, unprivileged identity: files in the volume keep one owner across image updates.
RUN groupadd --system --gid 10001 perfbot \
    && useradd --system --uid 10001 --gid perfbot --no-create-home --home-dir /nonexistent \
        --shell /usr/sbin/nologin perfbot \
    && mkdir /data \
    && chown perfbot:perfbot /data
COPY --from=builder /opt/perfbot /opt/perfbot
# The state (PERFBOT_DATABASE_URL's default perfbot.db, relative) lands in the volume.
WORKDIR /data
VOLUME /data
USER 10001:10001
EXPOSE 8080
HEALTHCHECK --interval=30s --timeout=5s --start-period=20s --retries=3 \
    CMD ["python", "-c", "import urllib.request as u; u.urlopen('http://127.0.0.1:8080/healthz', timeout=4)"]
CMD ["perfbot", "serve", "--host", "0.0.0.0", "--port", "8080"]
