"""A run on a Slurm node: the job's run process, one task per node, a search's Ray across nodes."""
