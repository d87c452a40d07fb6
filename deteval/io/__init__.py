"""Parsers for VOC XML, VOC result text, COCO JSON, TREC qrels/runs and .lab files → columnar numpy tables."""
