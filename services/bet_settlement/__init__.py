"""bet-settlement: bets and round results in; bet decisions and settlements out."""
