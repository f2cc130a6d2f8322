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
COPY pyproject.toml ./
COPY bot ./bot
COPY handlers ./handlers
COPY tools ./tools
RUN pip install --disable-pip-version-check .

RUN useradd --create-home --uid 10001 deblo && mkdir -p /data && chown deblo /data
USER deblo
ENV DATA_DIR=/data HOST=0.0.0.0 PORT=8080
EXPOSE 8080
HEALTHCHECK --interval=30s --timeout=3s CMD python -c "import urllib.request,os; urllib.request.urlopen(f'http://127.0.0.1:{os.environ.get(\"PORT\",\"8080\")}/healthz', timeout=2)"
CMD ["sh", "-c", "python -m bot db upgrade && exec python -m bot serve"]
