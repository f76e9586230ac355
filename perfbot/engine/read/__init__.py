"""Reading: report files become measurements.

``formats`` (one module per format, and the registry that sniffs them), ``sides`` (one
side of a run: files to series), ``sidecars`` (a lab's ``.exit``/``.stderr`` files) and
``platforms`` (choosing and lining up platform names). Nothing here judges or formats.
"""
