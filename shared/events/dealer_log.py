"""`dealer.log`: dealer-event's source of truth, one chained entry per decided input.

A `DealerEntry` carries what one record of `dealer.inputs` made the table do: the table
events it sealed (signed, exactly as published on `table.events`) and, for an input the
table refused, its `InputRefused` (published on `dealer.rejections`). A timer tick that
closed a betting window, or raised or voided a round left hanging, writes one too.
dealer-event's state is the fold of these entries (`services.dealer_event.dealer_fold`):
each table's state is its events folded in order, plus the inputs it refused on its
rules; nothing is read back from `table.events`.

Entries are chained per partition like every own log's (`services.infra.own_log`):
`prev` is the id of the partition's previous valid entry; any other entry is void and
skipped by every fold, and its events and refusal are never published. So a worker that
lost its tables (a zombie) can neither seal an event nor refuse an input that the log
keeps (docs/decisions/dealer-fencing.md).
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from shared.events.rejections import InputRefused
from shared.events.sources import ChainedEntry
from shared.events.table import TableEvent


class DealerEntry(ChainedEntry):
    """One decided input (or timer tick) of one table: the events it sealed and the refusal
    it answered, both published from here once the entry is in the log."""

    schema_version: Literal[1] = 1
    type: Literal["dealer_entry"] = "dealer_entry"
    table_id: str = Field(description="The input's table ('unknown' for an input that "
                                      "named none).")
    events: tuple[TableEvent, ...] = Field(
        default=(), description="The table events the decision sealed, in chain order, "
                                "as published on table.events.")
    rejection: InputRefused | None = Field(
        default=None, description="The refusal, as published on dealer.rejections.")
