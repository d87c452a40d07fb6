"""One module per ``deteval`` subcommand; each defines ``register(subparsers)``."""
