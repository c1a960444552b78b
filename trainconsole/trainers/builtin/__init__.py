"""The built-in trainer: one training loop for every strategy, and what it trains."""
