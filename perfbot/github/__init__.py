"""The adapter to GitHub: the only package that imports githubkit, httpx, httptools or jwt.

* ``errors``: the typed errors GitHub's failures map to (``retryable`` says: try later).
* ``types``: plain dataclasses of what perfbot reads (pulls, comments, artifacts, runs),
  importable without any HTTP library.
* ``transport``: githubkit over shared connection pools, the call deadline, GET retries,
  error mapping.
* ``app``: the App (JWT), its installations and its webhook delivery log.
* ``installation``: the calls made for one installation; ``tokens``: ``TokenGate``;
  ``convert``: githubkit's models as perfbot's types.
* ``setup`` and ``manifest``: registering the App from its manifest (``perfbot setup``).

This file imports nothing, so that importing ``perfbot.github.types`` loads no HTTP library.
"""
