"""`python -m console` is `trainconsole`."""

from console.cli import main

raise SystemExit(main())
