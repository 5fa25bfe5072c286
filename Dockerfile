# citadel's server image: `citadel serve` on 0.0.0.0:8080, data in the CITADEL_HOME volume.
# Build and run: docs/deployment.md ("Containers"); compose.yaml runs two servers on PostgreSQL.

# The build stage has a C++ compiler: hnswlib ships no wheel and is built from source.
FROM python:3.11-slim AS build
RUN apt-get update \
    && apt-get install -y --no-install-recommends build-essential \
    && rm -rf /var/lib/apt/lists/*
RUN python -m venv /opt/citadel
ENV PATH=/opt/citadel/bin:$PATH \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1
WORKDIR /src
COPY pyproject.toml README.md LICENSE ./
COPY src ./src
RUN pip install .

# The run stage: the installed environment only, no compiler, no sources.
FROM python:3.11-slim
RUN groupadd --system --gid 10001 citadel \
    && useradd --system --uid 10001 --gid citadel --home-dir /data --shell /usr/sbin/nologin citadel \
    && mkdir /data \
    && chown citadel:citadel /data \
    && chmod 0700 /data
COPY --from=build /opt/citadel /opt/citadel
ENV PATH=/opt/citadel/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    CITADEL_HOME=/data
USER citadel
WORKDIR /data
VOLUME ["/data"]
EXPOSE 8080
# /healthz answers while the process is up; /readyz also asks the store (docs/api.md).
HEALTHCHECK --interval=30s --timeout=5s --start-period=60s --retries=3 \
    CMD ["python", "-c", "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8080/healthz', timeout=4)"]
CMD ["citadel", "serve", "--host", "0.0.0.0", "--port", "8080"]
