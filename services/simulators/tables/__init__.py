"""A table that deals real shuffled cards and sends the inputs a live table produces."""
