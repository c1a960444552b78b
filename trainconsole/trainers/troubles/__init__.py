"""PyTorch troubles handled inside a run: the memory cap, OOM recovery, leak warnings, explanations.

The training loop calls these; it does not contain them.
"""
