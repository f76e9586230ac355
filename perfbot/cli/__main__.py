"""``python -m perfbot.cli``, as ``python -m perfbot`` and the ``perfbot`` script."""

from perfbot.cli import main

raise SystemExit(main())
