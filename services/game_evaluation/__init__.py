"""game-evaluation: table events in; one result per completed round out."""
