"""Protocol presets (``*.toml``), installed as the package ``deteval.configs``.

This file makes the folder a regular package once installed, so that ``importlib.resources`` returns a real
directory for :func:`deteval.config.list_presets`. Start every preset with ``# one-line description``.
"""
