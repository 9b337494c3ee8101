"""MkDocs hook: the README is the site's home page (index.md), so the two never drift apart.

The README links into the docs as GitHub reads it (`docs/api.md#limits`, `docs/screenshots/...`); on the site
those pages sit beside the home page, so the prefix is dropped. Any other relative link in the README (to a
file outside docs/) would point nowhere on the site: the strict build reports it, as it reports a broken link
or anchor of any page.
"""

from __future__ import annotations

import re
from pathlib import Path

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.structure.files import File, Files

# a Markdown link or image target that starts with docs/: `](docs/`
_INTO_DOCS = re.compile(r"\]\(docs/")


def home_page(readme: str) -> str:
    """The README as the site's index.md: its links into docs/ made relative to the docs directory."""
    return _INTO_DOCS.sub("](", readme)


def on_files(files: Files, config: MkDocsConfig) -> Files:
    readme = Path(config.config_file_path).parent / "README.md"
    files.append(File.generated(config, "index.md", content=home_page(readme.read_text())))
    return files
