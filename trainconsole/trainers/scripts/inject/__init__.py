"""The folder put first on a script run's PYTHONPATH: `sitecustomize.py` loads `_trainconsole_probe.py`."""
