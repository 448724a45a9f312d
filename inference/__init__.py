"""Model loading, the steered decoder and its caches. Never imports HTTP or database code."""
