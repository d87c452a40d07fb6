"""How an evaluation is executed: one process, parts here or on Dask workers, a second core, byte ranges.

The protocols say what is computed; this package decides where and in what pieces. Matching is local to an
image (to a topic for TREC), so a part of whole images yields its own compact match table; the tables of
disjoint parts merge into exactly the table one process would build, and accumulation on the merged table
gives the single-process numbers bit for bit. Dask is optional (``pip install deteval[dask]``) and imported
only when a client is used.
"""
