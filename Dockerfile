# syntax=docker/dockerfile:1
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

WORKDIR /app

# the wheel built from these carries the shipped capabilities and the web UI inside the package
COPY pyproject.toml README.md LICENSE ./
COPY src/ ./src/
COPY schemas/ ./schemas/
COPY capabilities/ ./capabilities/
COPY web/ ./web/

RUN pip install --no-cache-dir ".[server]" \
    && groupadd --system aitp \
    && useradd --system --gid aitp --home-dir /app --no-create-home aitp \
    && mkdir -p /data \
    && chown aitp:aitp /data

ENV AITP_STORE=sqlite:////data/aitp.db
VOLUME /data

USER aitp

EXPOSE 8000

HEALTHCHECK --interval=30s --timeout=5s --start-period=10s --retries=3 \
    CMD ["python", "-c", "import sys, urllib.request; sys.exit(0 if urllib.request.urlopen('http://127.0.0.1:8000/health', timeout=4).status == 200 else 1)"]

CMD ["aitp", "serve", "--host", "0.0.0.0", "--port", "8000"]
