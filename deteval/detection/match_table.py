"""Match tables of image shards and their exact merge: COCO's now live with its matcher
(:mod:`deteval.match.coco`), VOC's with its protocol (:mod:`deteval.detection.voc`); these names stay
importable from here."""

from deteval.detection.voc import VocMatchTable, merge_voc_tables
from deteval.match.coco import MatchTable, merge_coco_tables

__all__ = ["MatchTable", "VocMatchTable", "merge_coco_tables", "merge_voc_tables"]
