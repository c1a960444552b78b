"""Where a run lives, the protocol's side: whether its process lives, what its place says of its end."""
