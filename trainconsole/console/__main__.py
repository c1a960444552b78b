"""`python -m trainconsole.console` is `trainconsole`."""

from trainconsole.console.cli import main

raise SystemExit(main())
