"""Where a run lives, the control side: starting, stopping and killing a run in its place."""
