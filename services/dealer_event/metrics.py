"""Prometheus metrics of dealer-event (served on GET /metrics)."""

from prometheus_client import Counter

INPUTS = Counter("croupier_dealer_inputs_total", "Dealer inputs decided, by outcome.",
                 ["outcome"])
REFUSED = Counter("croupier_dealer_inputs_refused_total", "Dealer inputs refused, by reason.",
                  ["reason"])
EVENTS = Counter("croupier_table_events_published_total", "Table events appended.", ["type"])
