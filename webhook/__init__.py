"""The pykueue admission webhook (Flask under gunicorn)."""
