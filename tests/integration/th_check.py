"""check() and raises() for the Python client's integration scripts (python_client.py, python_verify.py):
each check prints "ok: ..." or "FAIL: ..." and exits 1 on the first failure."""
import sys


def check(cond, what):
    if not cond:
        print(f"FAIL: {what}", file=sys.stderr)
        sys.exit(1)
    print(f"ok: {what}")


def raises(exc, fn, *want):
    """fn() must raise exc with every string of want in its text; returns the exception."""
    try:
        fn()
    except exc as e:
        text = str(e)
        check(all(w in text for w in want), f"{exc.__name__} says {want}: {text}")
        return e
    check(False, f"{exc.__name__} raised (expected, naming {want})")
