"""The table-events key the services under test use (the development default unless the
environment sets `CROUPIER_TABLE_EVENTS_KEY`): everything a test writes onto `table.events`
is signed with it, as dealer-event signs (docs/decisions/table-event-auth.md)."""

from __future__ import annotations

from services.infra.settings import get_settings


def events_key() -> bytes:
    return get_settings().table_events_key_bytes
