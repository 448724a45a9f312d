"""English readers: each reads one family of requirement over the spaCy parse (:mod:`.named` holds the shared context)."""
