"""Example saltbench plugin (docs/extending.md): the ``hex`` task and the ``covered_mass`` function."""
