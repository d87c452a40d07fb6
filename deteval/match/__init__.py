"""Matching kernels with one home each: box IoU (:mod:`deteval.match.iou`) and the greedy assignment rules
(:mod:`deteval.match.greedy`, :mod:`deteval.match.coco`).

Pure numpy on arrays of boxes and overlaps; imports nothing above the core and the loaders.
"""
