"""Device probe (nineteenth session): in every Python process of a tune,
AUTOCONV_PROBE_NOFSYNC=1 makes os.fsync a no-op (does the journal's fsync bound a tune?);
AUTOCONV_PROBE_PROFILE=DIR profiles the process with cProfile and writes DIR/<pid>.prof at exit."""
import os

if os.environ.get("AUTOCONV_PROBE_NOFSYNC") == "1":
    os.fsync = lambda fd: None

_dir = os.environ.get("AUTOCONV_PROBE_PROFILE")
if _dir:
    import atexit
    import cProfile

    _profile = cProfile.Profile()
    _profile.enable()

    def _dump():
        _profile.disable()
        os.makedirs(_dir, exist_ok=True)
        _profile.dump_stats(os.path.join(_dir, f"{os.getpid()}.prof"))

    atexit.register(_dump)
