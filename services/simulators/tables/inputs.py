"""Signed dealer inputs as a table device or supervisor console builds them.

Ids are `<table>-<run tag>-<n>`: unique per run, so two runs on one table never
collide, and a resend (fault injection) reuses the very same signed input.
"""

from __future__ import annotations

import itertools
import secrets
from collections.abc import Callable
from datetime import datetime

from shared.events.inputs import SUPERVISOR_ONLY, InputBase

KeyFor = Callable[[str, str], bytes]


class InputFactory:
    def __init__(self, table_id: str, key_for: KeyFor, now: Callable[[], datetime], *,
                 run_tag: str | None = None, device: str = "device-1",
                 supervisor: str = "supervisor-1") -> None:
        self.table_id = table_id
        self.key_for = key_for
        self.now = now
        self.run_tag = run_tag or secrets.token_hex(3)
        self.names = {"device": device, "supervisor": supervisor}
        self._counter = itertools.count(1)

    def next_id(self) -> str:
        return f"{self.table_id}-{self.run_tag}-{next(self._counter)}"

    def make(self, command_type: type[InputBase], *, role: str | None = None,
             sign: bool = True, **fields) -> InputBase:
        command = command_type.model_fields["command"].default
        role = role or ("supervisor" if command in SUPERVISOR_ONLY else "device")
        fields.setdefault("input_id", self.next_id())
        fields.setdefault("sent_at", self.now())
        inp = command_type(table_id=self.table_id, role=role, signer=self.names[role], **fields)
        return inp.signed(self.key_for(self.table_id, role)) if sign else inp
