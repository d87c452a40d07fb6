"""Columnar tables: the types every loader returns and every protocol reads, and their checks.

A table of N records is arrays of length N (never N dicts). This layer imports only :mod:`deteval.errors`
and numpy: the loaders (:mod:`deteval.io`) build these tables, the protocols (:mod:`deteval.detection`, ...)
read them, and neither is imported here.

* :mod:`~deteval.tables.arrays`: in-memory array-likes → numbers and boxes, without coercion;
* :mod:`~deteval.tables.boxes`: :class:`~deteval.tables.boxes.BoxTable` (YOLO labels and predictions);
* :mod:`~deteval.tables.voc`: :class:`~deteval.tables.voc.VOCGroundTruth` and
  :class:`~deteval.tables.voc.VOCDetections` (Pascal VOC);
* :mod:`~deteval.tables.segments`: :class:`~deteval.tables.segments.Segments` (MIR segment annotations);
* :mod:`~deteval.tables.quads`: oriented boxes as quadrilateral rows (corners and area).
"""
