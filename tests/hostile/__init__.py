"""The hostile run: about 250 cases of what a hostile user might do to autoconv (bad values,
damaged and foreign files, kills, races, full disks), each in a sandbox and held to the same
invariants (``tests/hostile/harness.py``)."""
