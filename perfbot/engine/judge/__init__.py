"""Judging: measurements become verdicts.

``compare`` (base against head, per metric), ``noise`` (how much a metric scatters when
nothing changed), ``confirm`` (a second attempt before red) and ``conclusion`` (what the
check run concludes). Imports ``read``, never ``show``: no sentence a user reads is made here.
"""
