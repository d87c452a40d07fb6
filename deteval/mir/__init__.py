"""MIR measures on the core: set, pairwise frame-label and boundary P/R/F."""
