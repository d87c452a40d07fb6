"""Exact evaluation beyond one process: images sharded over Dask workers or training ranks.

Matching is local to an image, so a shard of whole images yields its own compact match table; the tables of
disjoint shards merge into exactly the table one process would build (:mod:`deteval.detection.match_table`),
and accumulation on the merged table gives the single-process numbers bit for bit. Dask is optional
(``pip install deteval[dask]``) and imported only when a client is used.
"""
