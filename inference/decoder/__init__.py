"""The steered decoder: our own beam search, token controllers and pruning."""
