"""The console's widgets: each only renders what it is given (no files, NVML or processes)."""
