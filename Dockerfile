# One image for every croupier process: the four services (docker-compose.yml runs
# `python -m services.<pkg> worker -l info` per service) and the `croupier` CLI
# (the one-shot `croupier topics apply` job). Settings come from the environment
# (CROUPIER_*, KAFKA_BOOTSTRAP_SERVERS; services/infra/settings.py).
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

WORKDIR /app

# Only what `pip install .` packages (pyproject: services*, shared*; readme).
COPY pyproject.toml README.md ./
COPY shared ./shared
COPY services ./services
RUN pip install . \
 && useradd --system --uid 10001 --home-dir /var/lib/croupier --create-home croupier

USER croupier
# Runtime state (Faust table stores: balances survive restarts) on a volume per service.
ENV CROUPIER_HOME=/var/lib/croupier
VOLUME ["/var/lib/croupier"]
EXPOSE 8101 8102 8103 8104

CMD ["croupier", "--help"]
