"""Where the files shipped with the service are: the capability schemas and the chat UI.

A wheel carries them inside the package (`aitp/_shipped/capabilities`, `aitp/_shipped/web`, placed there
by the build, see pyproject.toml); a source checkout (an editable install) reads the repository's
top-level `capabilities/` and `web/`, which stay the sources the repository shows.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import Literal

ShippedName = Literal["capabilities", "web"]

_REPOSITORY = Path(__file__).resolve().parents[2]


def shipped_directory(name: ShippedName) -> Path:
    """The directory of shipped `name` files: inside the installed package, else the repository's."""
    packaged = resources.files("aitp") / "_shipped" / name
    if packaged.is_dir():
        # a wheel is installed unpacked, so the package's files are plain paths on disk
        return Path(str(packaged))
    return _REPOSITORY / name
