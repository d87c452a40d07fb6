"""Object detection on the core: box IoU, greedy matchers, the VOC and COCO protocols."""
