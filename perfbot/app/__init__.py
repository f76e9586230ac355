"""The GitHub App: the edges (``server``, ``ingest``), triage, the job queue's ``worker``,
the ``handlers`` and what they need (config, artifacts, PR proof, the comment).

``settings`` reads the operator's configuration. ``actions`` is the Actions-only path
(``perfbot comment``), which runs the App's handler with a workflow's token.
"""
