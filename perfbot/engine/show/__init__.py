"""Showing: verdicts become markdown, text, JSON or SVG.

``render`` composes every body perfbot writes (it words every notice), from ``sections``,
``history``, ``mermaid`` and ``lossdetail``; ``terminal`` and ``singlerun`` are the
command line's text and single-run report, ``export`` its JSON, ``plot`` and ``barchart``
its SVG; ``escape`` makes untrusted text inert and ``numbers`` writes numbers alike everywhere.
"""
