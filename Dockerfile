# syntax=docker/dockerfile:1
# The bot's image, from a plain Debian base with Debian's own Python 3.11: the base can be made from
# Debian's packages where no registry is reachable (scripts/image-test does so with debootstrap).
ARG BASE_IMAGE=debian:bookworm-slim
FROM ${BASE_IMAGE}

ENV DEBIAN_FRONTEND=noninteractive PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 PATH=/opt/venv/bin:$PATH
# bubblewrap (and util-linux's prlimit) runs the code sandbox of the pro mode; DejaVu renders French
# text in PDFs and Symbola their emoji; Tesseract (with French data) reads photos' text; ffmpeg
# converts voice notes and makes spoken replies; tini is PID 1 when run without --init.
RUN --mount=type=cache,target=/var/cache/apt,sharing=locked \
    rm -f /etc/apt/apt.conf.d/docker-clean \
    && apt-get update \
    && apt-get install -y --no-install-recommends python3 python3-venv ca-certificates bubblewrap \
       util-linux fonts-dejavu-core fonts-symbola tesseract-ocr tesseract-ocr-fra ffmpeg tini \
    && rm -rf /var/lib/apt/lists/* \
    && python3 -m venv /opt/venv

WORKDIR /app
# The pinned versions first (requirements/run.txt, made by scripts/lock, checked against their
# hashes, every dependency listed, so --no-deps: nothing resolved again): a layer that changes only
# when they do. Behind a TLS-intercepting proxy, pass its CA bundle as the build secret `ca`
# (scripts/image-test passes the host's).
COPY requirements/run.txt ./requirements/run.txt
RUN --mount=type=cache,target=/root/.cache/pip --mount=type=secret,id=ca \
    if [ -s /run/secrets/ca ]; then export PIP_CERT=/run/secrets/ca; fi \
    && pip install --no-deps --require-hashes -r requirements/run.txt
COPY pyproject.toml ./
COPY bot ./bot
COPY handlers ./handlers
COPY tools ./tools
RUN --mount=type=secret,id=ca if [ -s /run/secrets/ca ]; then export PIP_CERT=/run/secrets/ca; fi \
    && pip install --no-cache-dir --no-deps . && rm -rf build *.egg-info

RUN useradd --create-home --uid 10001 deblo && mkdir -p /data && chown deblo /data
USER deblo
ENV DATA_DIR=/data HOST=0.0.0.0 PORT=8080
EXPOSE 8080
# /metrics is not on PORT: set METRICS_PORT (kept inside the network, not published) to scrape it.
# For `serve` (the default command); a `worker` or `db upgrade` container has no web server
# (docker-compose.yml turns this check off for them; `docker run --no-healthcheck` does too).
HEALTHCHECK --interval=30s --timeout=3s CMD python -c "import urllib.request,os; urllib.request.urlopen(f'http://127.0.0.1:{os.environ.get(\"PORT\",\"8080\")}/healthz', timeout=2)"
# The command is chosen by argument: `docker run IMAGE` serves and runs the workers in one process,
# `docker run IMAGE worker` is one more worker, `docker run IMAGE db upgrade` migrates. Python is
# the process that gets SIGTERM: it finishes what is in flight within SHUTDOWN_GRACE_S (25 s), so
# stop it with 30 s (`docker stop -t 30`; docker-compose.yml sets stop_grace_period).
STOPSIGNAL SIGTERM
ENTRYPOINT ["python", "-m", "bot"]
CMD ["serve", "--with-workers"]
