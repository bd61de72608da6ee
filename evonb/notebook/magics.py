"""``%evo`` and ``%%evo``: thin magics over the evonb library (``%load_ext evonb``)."""

from __future__ import annotations

import difflib
import re
from typing import Any

from IPython.core.error import UsageError
from IPython.core.magic import Magics, line_cell_magic, magics_class

from evonb.notebook.commands import ALIASES, COMMANDS, SQL_WORDS, Command, help_text
from evonb.notebook.commands.spark import start_session
from evonb.notebook.config import Evo
from evonb.notebook.context import Context
from evonb.notebook.errors import user_errors

_FIRST_WORD = re.compile(r"\s*(\S+)\s*(.*)", re.DOTALL)
_HELP = ("help", "-h", "--help", "?")


@magics_class
class EvoMagics(Magics):
    """The ``%evo`` line magic and ``%%evo`` cell magic."""

    def __init__(self, shell: Any, config: Evo) -> None:
        super().__init__(shell)
        self.evo = config
        self.context = Context(config, shell.user_ns if shell is not None else {})

    @line_cell_magic
    def evo(self, line: str, cell: str | None = None) -> Any:
        """Work with evonb tables: ``%evo help`` lists the commands.

        In a cell, the first line names the command and the cell holds its statements
        (``%%evo preview`` + ALTER statements); with no command, the statements say what to
        do: ALTER statements are applied as one schema change, CREATE TABLE creates, SELECT
        runs Spark SQL.
        """
        if cell is None:
            text = line
        elif not line.strip() or line.strip().lower() in ("alter", "create"):
            text = cell
        else:
            text = line.rstrip() + "\n" + cell
        if self.shell is not None:
            self.context.user_ns = self.shell.user_ns
        with user_errors():
            return self.run(text)

    def run(self, text: str) -> Any:
        """Dispatch ``text`` (a subcommand and its arguments) and return the result to show."""
        match = _FIRST_WORD.match(text)
        if match is None or match.group(1).lower() in _HELP:
            about = [w.lower() for w in match.group(2).split()] if match is not None else []
            if len(about) > 1:
                raise UsageError("Usage: %evo help [<command>]")
            named = about and about[0] not in _HELP
            print(help_text(_command(about[0]).name if named else None))
            return None
        word, rest = match.group(1).lower(), match.group(2)
        command = _command(word)
        whole = command.whole or word in SQL_WORDS
        if command.spark:
            start_session()
        return command.run(self.context, text.strip() if whole else rest)


def _command(word: str) -> Command:
    """The subcommand ``word`` names (or an alias of it); a UsageError with the closest name
    otherwise."""
    command = COMMANDS.get(ALIASES.get(word, word))
    if command is None:
        close = difflib.get_close_matches(word, [*COMMANDS, *ALIASES], n=1)
        hint = f" Did you mean {ALIASES.get(close[0], close[0])!r}?" if close else ""
        raise UsageError(f"Unknown %evo command {word!r}.{hint} Run %evo help for the list.")
    return command


def _find_config(ipython: Any) -> Evo | None:
    for item in getattr(ipython, "configurables", ()):
        if isinstance(item, Evo):
            return item
    return None


def load_ipython_extension(ipython: Any) -> None:
    """Register ``%evo``/``%%evo`` and the ``Evo`` settings with the shell."""
    config = _find_config(ipython)
    if config is None:
        config = Evo(parent=ipython)
        ipython.configurables.append(config)
    ipython.register_magics(EvoMagics(ipython, config))


def unload_ipython_extension(ipython: Any) -> None:
    """Remove the magics and the settings object (``%unload_ext evonb``)."""
    for kind in ("line", "cell"):
        ipython.magics_manager.magics[kind].pop("evo", None)
    config = _find_config(ipython)
    if config is not None:
        ipython.configurables.remove(config)
