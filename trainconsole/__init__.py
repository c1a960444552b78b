"""trainconsole: a terminal console for PyTorch training runs: `console` (the UI, the CLI), `trainers` (the
runs)."""
