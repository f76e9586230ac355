from perfbot.cli import main

raise SystemExit(main())
