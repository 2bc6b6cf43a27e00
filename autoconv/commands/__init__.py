"""The ``autoconv`` command line: argument parsing and printing, one module per command.

- :mod:`~autoconv.commands.main`: the parser, built from the command modules, and the dispatch.
- :mod:`~autoconv.commands.console`: the Rich display (progress bars, tables, shown locations).
- :mod:`~autoconv.commands.options`: arguments several commands share.
- one module per command, each with ``add_parser(subparsers)`` and ``run(args)``:
  :mod:`~autoconv.commands.render`, :mod:`~autoconv.commands.space`,
  :mod:`~autoconv.commands.families`, :mod:`~autoconv.commands.verify`,
  :mod:`~autoconv.commands.check`, :mod:`~autoconv.commands.bench`,
  :mod:`~autoconv.commands.report`, :mod:`~autoconv.commands.tune`,
  :mod:`~autoconv.commands.show`, :mod:`~autoconv.commands.cache`.

Domain code (problems, kernels, search, cache, bench) never prints; commands do. Where a
command and the domain could disagree on a setting (the storage, where winners go), both
take it from :class:`autoconv.search.session.TuneSession`.
"""
