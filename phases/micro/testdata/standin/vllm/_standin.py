"""The stand-in's call log: each distinct call is written once to
$PROFDECK_STANDIN_LOG (one JSON line), for the tests to read back."""
import json
import os

_seen = set()


def log(rec):
    """Writes the first call of each shape."""
    key = json.dumps(rec, sort_keys=True)
    path = os.environ.get("PROFDECK_STANDIN_LOG")
    if path and key not in _seen:
        _seen.add(key)
        with open(path, "a") as f:
            f.write(json.dumps(rec) + "\n")
