"""Model weights in float32, bfloat16, weight-only int8 or int4, chosen per machine (``TENET_WEIGHTS``)."""
