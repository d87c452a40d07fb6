"""Document-retrieval measures on the core (trec_eval conventions)."""
