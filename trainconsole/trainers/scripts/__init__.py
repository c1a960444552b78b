"""Any training script as a run: the runner that reads its output into events, the `report` API it may
call, and the queue waiter. Stdlib (and psutil) only at import: nothing here imports torch."""
