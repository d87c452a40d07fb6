"""Why the AP is what it is: error decomposition (TIDE) and related diagnostics, on top of the matchers."""
