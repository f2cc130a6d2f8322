FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 PIP_NO_CACHE_DIR=1
# bubblewrap runs the code sandbox of the pro mode; DejaVu renders French text in PDFs and Symbola
# their emoji; Tesseract (with French data) reads photos' text; ffmpeg converts voice notes and
# makes spoken replies.
RUN apt-get update \
    && apt-get install -y --no-install-recommends bubblewrap fonts-dejavu-core fonts-symbola \
       tesseract-ocr tesseract-ocr-fra ffmpeg \
    && rm -rf /var/lib/apt/lists/*

WORKDIR /app
# The pinned versions first (requirements/run.txt, made by scripts/lock, checked against their
# hashes): a layer that changes only when they do.
COPY requirements/run.txt ./requirements/run.txt
RUN pip install --disable-pip-version-check --require-hashes -r requirements/run.txt
COPY pyproject.toml ./
COPY bot ./bot
COPY handlers ./handlers
COPY tools ./tools
RUN pip install --disable-pip-version-check --no-deps .

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
