"""Pascal VOC files: annotation XML, image-set lists and detection results.

* :mod:`~deteval.io.voc.annotations`: ``Annotations/<id>.xml`` → :class:`~deteval.tables.voc.VOCGroundTruth`
  (:func:`load_voc_annotations`, :func:`parse_voc_xml`);
* :mod:`~deteval.io.voc.xml_safety`: XML parsed without DTDs or entities (:func:`parse_xml_safely`), the
  files of a folder by one parser;
* :mod:`~deteval.io.voc.files`: image-set lists (:func:`read_image_set`) and file reading;
* :mod:`~deteval.io.voc.detections`: result files, comp4 (one per class) or one file with a class column →
  :class:`~deteval.tables.voc.VOCDetections` (:func:`load_voc_detections`,
  :func:`discover_detection_classes`), parsed by :mod:`~deteval.io.voc.text_table`.

Bad records (a detection line, an annotation object) raise, naming the file and the record; with
``on_error="skip"`` they are left out and listed (``skipped``), so that the valid records are scored exactly
as in the file without them. Text files may carry a UTF-8 byte-order mark, CRLF or CR line ends, tabs and
repeated spaces. Every class of bad input and its handling is listed in ``docs/errors.md``.
"""

from deteval.io.voc.annotations import load_voc_annotations, parse_voc_xml
from deteval.io.voc.detections import discover_detection_classes, load_voc_detections
from deteval.io.voc.files import PathLike, read_image_set
from deteval.io.voc.xml_safety import parse_xml_safely

__all__ = [
    "PathLike",
    "discover_detection_classes",
    "load_voc_annotations",
    "load_voc_detections",
    "parse_voc_xml",
    "parse_xml_safely",
    "read_image_set",
]
