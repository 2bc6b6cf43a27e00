"""Hostile paths: the cache, the study storage and the results folder of ``autoconv tune`` (and
the cache of ``show`` and ``cache export/import/clear``) pointing at a folder, a device, a FIFO,
``/proc``, a path below a file, another program's files, and foreign files where autoconv's own
would go (a ``.flock`` folder, a damaged ``.index``, a ``tune.json`` it did not write)."""

from __future__ import annotations

import os
import sqlite3

import pytest

from tests.hostile.harness import TUNE_WRITES, Case, params
from tests.hostile.states import copy_tuned


def _foreign_sqlite(box, relative):
    box.path(relative).parent.mkdir(parents=True, exist_ok=True)
    with sqlite3.connect(box.path(relative)) as db:
        db.execute("CREATE TABLE accounts (name TEXT, balance REAL)")
        db.execute("INSERT INTO accounts VALUES ('alice', 10)")
    sqlite3.connect(box.path(relative)).close()


def _text(box, relative, text="someone else's notes\n"):
    box.write(relative, text)


def _folder(box, relative):
    box.path(relative).mkdir(parents=True)


def _link(box, relative, target):
    box.path(relative).parent.mkdir(parents=True, exist_ok=True)
    box.path(relative).symlink_to(target)


#: (id, setup of the place, the path given) for a file autoconv makes (cache, storage)
FILE_PLACES = [
    ("a-folder", lambda b: _folder(b, "x/place"), "x/place"),
    ("a-text-file", lambda b: _text(b, "x/place"), "x/place"),
    ("an-empty-file", lambda b: _text(b, "x/place", ""), "x/place"),
    ("a-binary-file", lambda b: b.write("x/place", bytes(range(256)) * 8), "x/place"),
    ("another-programs-sqlite", lambda b: _foreign_sqlite(b, "x/place"), "x/place"),
    ("below-a-file", lambda b: _text(b, "x/file"), "x/file/place"),
    ("a-dangling-link", lambda b: _link(b, "x/place", "../nowhere/target"), "x/place"),
    ("a-link-to-a-foreign-file", lambda b: (_text(b, "x/target"), _link(b, "x/place", "target")), "x/place"),
    ("dev-null", None, "/dev/null"),
    ("dev-full", None, "/dev/full"),
    ("proc-self-mem", None, "/proc/self/mem"),
    ("proc-folder", None, "/proc/self"),
    ("empty", None, ""),
    ("newline-in-name", None, "x/pla\nce"),
    ("very-long", None, "x/" + "p" * 5000),
    ("deep", None, "x/" + "d/" * 2000 + "place"),
    ("deep-and-short", None, "x/" + "d/" * 1200 + "place"),
]

#: The paths outside the sandbox a place names (nothing may appear beside them).
OUTSIDE = ("/dev/null", "/dev/full", "/proc/self/mem")


def _outside(path):
    return tuple(p for p in OUTSIDE if p == path)


def _tune_case(what, name, setup, path):
    flag = {"cache": "--cache", "storage": "--storage", "results": "--results"}[what]
    writes = TUNE_WRITES + ("x/**",)

    def full_setup(box):
        copy_tuned(box)
        if setup:
            setup(box)
    # (where the place is acceptable, the run tunes into it: a file it creates under x/)
    return Case(f"tune-{what}-{name}", setup=full_setup, writes=writes if name in _CREATES.get(what, ()) else
                TUNE_WRITES, outside=_outside(path),
                act=lambda box: box.cli("tune", "tune.yaml", flag, path, "--retune", "--trials", "9"))


#: Places where a run may legitimately create its file (empty: autoconv's own is created there).
_CREATES = {"cache": ("newline-in-name", "an-empty-file"), "storage": ("newline-in-name", "an-empty-file"),
            "results": ("newline-in-name", "a-dangling-link")}

#: (id, setup, path) for the results folder
FOLDER_PLACES = [
    ("a-file", lambda b: _text(b, "x/place"), "x/place"),
    ("dev-null", None, "/dev/null"),
    ("proc", None, "/proc/self"),
    ("below-a-file", lambda b: _text(b, "x/file"), "x/file/place"),
    ("a-dangling-link", lambda b: _link(b, "x/place", "../nowhere"), "x/place"),
    ("foreign-tune-json", lambda b: _text(b, "x/place/tune.json", '{"mine": "not autoconv\'s"}\n'), "x/place"),
    ("tune-json-a-folder", lambda b: _folder(b, "x/place/tune.json"), "x/place"),
    ("tune-json-a-link", lambda b: (_text(b, "x/target"), _link(b, "x/place/tune.json", "../target")), "x/place"),
    ("empty", None, ""),
    ("newline-in-name", None, "x/pla\nce"),
    ("deep", None, "x/" + "d/" * 2000 + "place"),
    ("deep-and-short", None, "x/" + "d/" * 1200 + "place"),
]


#: Foreign files beside autoconv's own, in the tuned state: (id, setup)
BESIDE = [
    ("flock-a-folder", lambda b: (os.remove(b.path("state/studies.journal.flock")),
                                  _folder(b, "state/studies.journal.flock"))),
    ("flock-a-link", lambda b: (os.remove(b.path("state/studies.journal.flock")),
                                _link(b, "state/studies.journal.flock", "../x/elsewhere"))),
    ("index-garbage", lambda b: _text(b, "state/studies.journal.index", "not an index\n")),
    ("index-a-folder", lambda b: (os.remove(b.path("state/studies.journal.index")),
                                  _folder(b, "state/studies.journal.index"))),
    ("index-from-another-journal", lambda b: _text(b, "state/studies.journal.index",
                                                   '{"format":"autoconv journal index 1","first":"0","boot":"x",'
                                                   '"written":[10,1,0],"forced":[10,1,0]}')),
    ("wal-garbage", lambda b: _text(b, "state/cache.sqlite-wal", "garbage" * 100)),
    ("shm-a-folder", lambda b: _folder(b, "state/cache.sqlite-shm")),
    ("journal-a-text-file", lambda b: (_text(b, "state/studies.journal", "my notes\n"),
                                       os.remove(b.path("state/studies.journal.index")))),
    ("journal-foreign-json-lines", lambda b: (_text(b, "state/studies.journal", '{"a": 1}\n{"b": 2}\n'),
                                              os.remove(b.path("state/studies.journal.index")))),
    ("cache-a-foreign-sqlite", lambda b: (os.remove(b.path("state/cache.sqlite")),
                                          _foreign_sqlite(b, "state/cache.sqlite"))),
    ("cache-truncated", lambda b: b.write("state/cache.sqlite", b.path("state/cache.sqlite").read_bytes()[:1000])),
    ("cache-first-page-gone", lambda b: b.write("state/cache.sqlite", b"\0" * 4096
                                                + b.path("state/cache.sqlite").read_bytes()[4096:])),
    ("results-tune-json-foreign", lambda b: _text(b, "results/tune.json", "my own summary\n")),
    ("state-a-file", lambda b: (_remove_tree(b, "state"), _text(b, "state", "a file named state\n"))),
]


def _remove_tree(box, relative):
    import shutil
    shutil.rmtree(box.path(relative))


def _beside_case(name, setup):
    def full_setup(box):
        copy_tuned(box)
        setup(box)
    # The state's own files may change; the foreign one among them must not (it is not autoconv's).
    changed = {"results-tune-json-foreign": ("state/*",), "journal-a-text-file": ("state/cache.sqlite*",),
               "journal-foreign-json-lines": ("state/cache.sqlite*",),
               "cache-a-foreign-sqlite": ("state/studies.journal*",), "cache-truncated": ("state/studies.journal*",),
               "cache-first-page-gone": ("state/studies.journal*",)}
    writes = changed.get(name, TUNE_WRITES)
    return Case(f"beside-{name}", setup=full_setup, writes=writes,
                act=lambda box: box.cli("tune", "tune.yaml", "--retune", "--trials", "9"))


#: Other commands given a bad cache: (id, argv with {} for the place)
CACHE_COMMANDS = [
    ("show", ["show", "--cache", "{}"]),
    ("export", ["cache", "export", "--cache", "{}", "out.json"]),
    ("clear", ["cache", "clear", "--cache", "{}"]),
    ("import", ["cache", "import", "--cache", "{}", "in.json"]),
]

#: Places for those commands: (id, setup, path)
COMMAND_PLACES = [p for p in FILE_PLACES if p[0] in (
    "a-folder", "a-text-file", "another-programs-sqlite", "dev-null", "proc-self-mem", "below-a-file")]


def _command_case(command, argv, name, setup, path):
    def full_setup(box):
        copy_tuned(box)
        box.write("in.json", box.path("results/tune.json").read_text())
        if setup:
            setup(box)
    return Case(f"{command}-cache-{name}", setup=full_setup, outside=_outside(path),
                act=lambda box: box.cli(*[a.replace("{}", path) for a in argv]))


#: Export and import files: (id, setup, argv)
EXCHANGE = [
    ("export-over-a-foreign-file", lambda b: _text(b, "out.json"),
     ["cache", "export", "--cache", "state/cache.sqlite", "out.json"], ()),
    ("export-to-dev-null", None, ["cache", "export", "--cache", "state/cache.sqlite", "/dev/null"], ()),
    ("export-to-dev-full", None, ["cache", "export", "--cache", "state/cache.sqlite", "/dev/full"], ()),
    ("export-into-a-folder", lambda b: _folder(b, "out"), ["cache", "export", "--cache", "state/cache.sqlite", "out"],
     ()),
    ("export-over-the-cache", None, ["cache", "export", "--cache", "state/cache.sqlite", "state/cache.sqlite"], ()),
    ("export-over-the-journal", None, ["cache", "export", "--cache", "state/cache.sqlite", "state/studies.journal"],
     ()),
    ("export-no-cache", None, ["cache", "export", "--cache", "none.sqlite", "out.json"], ()),
    ("export-fresh", None, ["cache", "export", "--cache", "state/cache.sqlite", "out.json"], ("out.json",)),
    ("export-twice", lambda b: None, ["cache", "export", "--cache", "state/cache.sqlite", "results/tune.json"], ()),
    ("clear-a-journal", None, ["cache", "clear", "--cache", "state/studies.journal"], ()),
    ("clear-the-config", None, ["cache", "clear", "--cache", "tune.yaml"], ()),
    ("import-itself", None, ["cache", "import", "--cache", "state/cache.sqlite", "state/cache.sqlite"], ()),
    ("import-the-journal", None, ["cache", "import", "--cache", "state/cache.sqlite", "state/studies.journal"], ()),
    ("import-dev-zero", None, ["cache", "import", "--cache", "state/cache.sqlite", "/dev/zero"], ()),
    ("import-proc-mem", None, ["cache", "import", "--cache", "state/cache.sqlite", "/proc/self/mem"], ()),
    ("import-a-folder", lambda b: _folder(b, "in"), ["cache", "import", "--cache", "state/cache.sqlite", "in"], ()),
]


def _exchange_case(name, setup, argv, writes):
    def full_setup(box):
        copy_tuned(box)
        if setup:
            setup(box)
    outside = tuple(a for a in argv if a.startswith("/dev/"))
    return Case(f"exchange-{name}", setup=full_setup, writes=writes, outside=outside,
                act=lambda box: box.cli(*argv))


CASES = ([_tune_case(what, *place) for what in ("cache", "storage") for place in FILE_PLACES]
         + [_tune_case("results", *place) for place in FOLDER_PLACES]
         + [_beside_case(*b) for b in BESIDE]
         + [_command_case(c, a, *p) for c, a in CACHE_COMMANDS for p in COMMAND_PLACES]
         + [_exchange_case(*e) for e in EXCHANGE])


@pytest.mark.parametrize("case", params(CASES))
def test_paths(hostile, case):
    hostile(case)


@pytest.mark.parametrize("what", ["cache", "storage", "results"])
def test_a_fifo(hostile, what):
    """A FIFO where a file or folder goes: refused without opening it (which would block)."""
    flag = f"--{what}"

    def act(box):
        box.spawn("tune", "tune.yaml", flag, "x/fifo", "--retune", "--trials", "9").wait(timeout=60)

    def setup(box):
        copy_tuned(box)
        box.path("x").mkdir()
        os.mkfifo(box.path("x/fifo"))
    hostile(Case(f"tune-{what}-fifo", setup=setup, act=act, writes=TUNE_WRITES))
