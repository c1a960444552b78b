"""Hyperparameter search on Ray Tune: `python -m trainconsole.trainers.tune RUN_DIR [--resume]`.

- `space.py`: `[tune]` → Ray's param space, searcher and scheduler.
- `trial.py`: one trial, in a Ray worker: the same training loop as a run, reporting each epoch.
- `bridge.py`: the driver's callback writing `trial` events, and the stopper for one trial.
- `session.py`: starting and ending the local Ray (temp dir, no dashboard, loopback).
- `driver.py`: the search from start (or restore) to its final event.

Nothing here is imported by the console; only `__main__` and `driver` import ray, after the config checks.
"""
