"""Names vulture (make lint) reports unused that are used where it cannot see: by a
framework, by serialisation, or by name in a string. Keep it short: dead code is deleted,
not listed here (docs/decisions/house.md "Dead code")."""
# ruff: noqa

# hooks a library calls by name
_.on_partitions_revoked, _.on_partitions_assigned  # aiokafka's rebalance listener (infra/consumer.py)
_.on_web_request_start, _.on_web_request_end  # Faust's Sensor (infra/observability.py)
_.handle_starttag, _.handle_endtag, _.handle_data  # html.parser.HTMLParser (a test's parser)
_.core_schema  # pydantic's __get_pydantic_json_schema__ signature (shared/cards.py)

# attributes a library reads
_.__qualname__  # Faust names a timer by its function's qualname (infra/observability.py)
_._fetch_max_wait_ms  # aiokafka's consumer (infra/faust_app.py)
_.caption  # rich's Table (demo/render.py)
_.id_val  # the Grafana SDK's panel (devtools/grafana_dashboards.py)
_.row_factory  # sqlite3's connection (simulators/operator_wallet/store.py)
_.binary_location  # selenium's ChromeOptions (a browser test)
_.round_bets, _.shoe_figures  # read by the console's template (templates/console/_floor.html)

# fields of models written out whole (JSON reports, API bodies, manifests, events, profiles)
_.first_timestamp_ms, _.last_timestamp_ms  # an archive segment's manifest
_.taken_at  # a snapshot's manifest
_.http_answers, _.withdrawals, _.void_events, _.margin_seconds  # CLI/HTTP reports
_.net_at_tables, _.transaction, _.older_in_archive  # the wallet's HTTP answers
_.completed_hash  # RoundResult, an event
_.reshuffle_every_round  # a Triple Face profile
_.SHUFFLER_STUCK, _.MIS_SCAN, _.MANUAL_ENTRY  # enum values accepted on the wire
_.game_evaluation_port, _.bet_settlement_port  # settings read by name (infra/service_table.py)
_.leases  # the new field a snapshot test adds to see it refused

# pytest fixtures asked for by name (request.getfixturevalue)
_.broker_pool, _.local_s3

# fields on the wire that nothing reads back any more
_.decided_through  # InputPosition (shared/events/sources.py): in every table event and refusal since issue 17; dealer-event resumes from dealer.log since issue 29

# a module's __getattr__ (PEP 562): `from services.cli.main import app` builds the full CLI
_.__getattr__
