"""How the wallet's folded state is written to its snapshots (`wallet.ledger.snapshots`,
services/infra/snapshots.py): each value by its key's prefix (services/wallet/ledger_fold.py),
held and unpublished entries as ledger entries."""

from __future__ import annotations

from services.infra.snapshots import PydanticCodec
from shared.events.operator_wallet import OperatorCall
from shared.events.wallet_events import WalletTransaction
from shared.events.wallet_ledger import Account, BetRecord, LedgerEntry

WALLET_CODEC = PydanticCodec(LedgerEntry, {
    "a/": Account,  # a/<player>
    "t/": WalletTransaction,  # t/<player>/<seq>
    "x/": int,  # x/<player>/<tx_id> -> seq
    "b/": BetRecord,  # b/<player>/<bet_id>
    "s/": int,  # s/<spot key> -> total
    "c/": OperatorCall,  # c/<player>/<tx id> (seamless mode)
})
