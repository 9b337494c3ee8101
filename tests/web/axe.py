"""axe-core in the browser tests: inject the vendored `axe.min.js` into a Playwright page, run it, and keep the
violations that matter (impact moderate, serious or critical) in a form an assertion message can show.

axe-core is test-only (tests/web/vendor/README.md says which version and how to update it): the app never
serves it, the tests put it in the page they drive.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from playwright.sync_api import Frame, Page

AXE = Path(__file__).resolve().parent / "vendor" / "axe.min.js"
# WCAG 2.0 and 2.1 at levels A and AA, plus Deque's best practices (heading order, landmarks...)
TAGS = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "best-practice"]
# "minor" is left out on purpose: the bar is no violation of moderate impact or worse
IMPACTS = ("moderate", "serious", "critical")

# the whole document, with the tags above; `resultTypes` keeps the answer small (passes are not needed)
RUN = """async (tags) => {
  const results = await window.axe.run(document, {
    runOnly: { type: "tag", values: tags },
    resultTypes: ["violations"],
  });
  return results.violations.map((violation) => ({
    id: violation.id,
    impact: violation.impact,
    help: violation.help,
    helpUrl: violation.helpUrl,
    nodes: violation.nodes.map((node) => ({
      target: node.target.map((part) => (Array.isArray(part) ? part.join(" >> ") : part)).join(" >>> "),
      impact: node.impact,
      summary: node.failureSummary || "",
    })),
  }));
}"""


@dataclass(frozen=True)
class Violation:
    """One axe rule broken by one or more elements (their CSS selectors, as axe names them)."""

    rule: str
    impact: str
    help: str
    url: str
    targets: tuple[str, ...]
    summaries: tuple[str, ...]

    def __str__(self) -> str:
        lines = [f"{self.rule} ({self.impact}): {self.help} <{self.url}>"]
        for target, summary in zip(self.targets, self.summaries, strict=True):
            lines.append(f"  - {target}")
            lines.extend(f"      {line.strip()}" for line in summary.splitlines() if line.strip())
        return "\n".join(lines)


def inject_axe(page: Page | Frame) -> None:
    """Put axe-core in `page`, or in one frame of it (once per document: a navigation or a reload needs it
    again)."""
    loaded = "() => typeof window.axe === 'object'"
    if not page.evaluate(loaded):
        page.add_script_tag(content=AXE.read_text(encoding="utf-8"))
    # an inline script is what a `script-src` Content-Security-Policy would block: say so, not "axe is undefined"
    assert page.evaluate(loaded), "axe-core did not load: does the page's CSP block inline scripts? (bypass_csp)"


def axe_violations(page: Page | Frame, excluded: Iterable[tuple[str, str]] = ()) -> list[Violation]:
    """The violations of moderate impact or worse on the page as it is now.

    `excluded` holds (rule id, target selector) pairs to leave out: each one is a known case whose fix belongs
    to a file the test's author could not change, and must say so where it is passed."""
    inject_axe(page)
    skip = set(excluded)
    found: list[Violation] = []
    for raw in page.evaluate(RUN, TAGS):
        nodes: list[dict[str, Any]] = [
            node
            for node in raw["nodes"]
            if (node["impact"] or raw["impact"]) in IMPACTS and (raw["id"], node["target"]) not in skip
        ]
        if nodes:
            found.append(
                Violation(
                    rule=raw["id"],
                    impact=raw["impact"],
                    help=raw["help"],
                    url=raw["helpUrl"],
                    targets=tuple(node["target"] for node in nodes),
                    summaries=tuple(node["summary"] for node in nodes),
                )
            )
    return found


def format_violations(violations: Iterable[Violation]) -> str:
    """The violations, one paragraph each, for an assertion message."""
    return "\n".join(str(violation) for violation in violations)


def assert_accessible(page: Page | Frame, where: str, excluded: Iterable[tuple[str, str]] = ()) -> None:
    """Fail, naming `where` (which screen of the UI) and each violation, if axe finds one of moderate impact
    or worse on `page` (or in a frame, e.g. the embedded chat's: `page.frame_locator(...)` has no document,
    `page.frames` do)."""
    violations = axe_violations(page, excluded)
    assert not violations, f"axe-core found in {where}:\n{format_violations(violations)}"
