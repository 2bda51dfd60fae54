"""References stay inside the repository: no tracked file cites a document outside it.

Comments and docs cite files of the repository (docs/article.md,
docs/decision-table.md, docs/threat-model.md, ...). This fails on a citation of
something a reader of the repository cannot open: a design document by section
("DESIGN §4"), an issue or pull request by number, the machine's notes
(BAZEL_OFFLINE.md, ...). "The article" is the source article that docs/article.md
summarizes: a file that speaks of it must name docs/article.md.

The test reads the checkout its own source lives in (`git ls-files`), so it is
tagged `external`: Bazel never serves it from a cache.
"""

import re
import subprocess
from pathlib import Path

from absl.testing import absltest

# What a reader of the repository cannot open, and what to cite instead.
_OUTSIDE = (
    (re.compile(r"\bDESIGN\b|§"), "a design document by section: cite a file of docs/"),
    (
        re.compile(r"\b(?:[Ii]ssues?|PR|[Pp]ull request) #?\d+"),
        "an issue or pull request by number: say what it found, or cite a file of docs/",
    ),
    (
        re.compile(r"BAZEL_OFFLINE|BAZEL_MODERN|STYLE\.md|/work/shared"),
        "notes of the machine, not the repository: cite docs/offline.md or a file of docs/",
    ),
)
_ARTICLE = re.compile(r"\b[Tt]he article\b|\b[Aa]rticle's\b")

# Data whose bytes are pinned elsewhere: sealed fixture trees (editing a file
# would break its seal) hold no comments to fix.
_SEAL_SUFFIX = ".seal"

# Not text, or the definition itself.
_SKIPPED_SUFFIXES = (".patch", ".diff", ".zip", ".png", ".lock")
_DEFINITION = "docs/article.md"


def _checkout() -> Path:
    """The source checkout this test file belongs to (through Bazel's runfiles symlink)."""
    return Path(__file__).resolve().parents[3]


def _tracked(root: Path) -> list[str]:
    listing = subprocess.run(
        ["git", "-C", str(root), "ls-files", "-z"],
        capture_output=True,
        check=False,
    )
    if listing.returncode != 0:
        raise AssertionError(
            f"`git ls-files` failed in {root} ({listing.stderr.decode(errors='replace').strip()}); "
            "run this test in a git checkout of agent_gate"
        )
    return [name.decode() for name in listing.stdout.split(b"\0") if name]


def _sealed_roots(paths: list[str]) -> list[str]:
    return [str(Path(path).parent) for path in paths if path.endswith(_SEAL_SUFFIX)]


def _checked(paths: list[str]) -> list[str]:
    sealed = _sealed_roots(paths)
    this = str(Path(__file__).resolve().relative_to(_checkout()))
    kept = []
    for path in paths:
        if path in (this, _DEFINITION) or path.endswith(_SKIPPED_SUFFIXES):
            continue
        if any(root == "." or path.startswith(root + "/") for root in sealed):
            continue
        kept.append(path)
    return kept


def findings(root: Path, paths: list[str]) -> list[str]:
    """`path:line: what` for each citation of a document outside the repository."""
    found = []
    for path in paths:
        try:
            text = (root / path).read_text(encoding="utf-8")
        except (UnicodeDecodeError, IsADirectoryError, FileNotFoundError):
            continue  # binary data, a submodule, or deleted in the work tree
        for number, line in enumerate(text.splitlines(), start=1):
            for pattern, what in _OUTSIDE:
                if pattern.search(line):
                    found.append(f"{path}:{number}: {what}: {line.strip()}")
        if "article.md" not in text:
            for number, line in enumerate(text.splitlines(), start=1):
                if _ARTICLE.search(line):
                    found.append(
                        f"{path}:{number}: speaks of the article without naming docs/article.md "
                        f"(the summary it means): {line.strip()}"
                    )
                    break
    return found


class CitationsTest(absltest.TestCase):
    def test_no_tracked_file_cites_a_document_outside_the_repository(self) -> None:
        root = _checkout()
        paths = _checked(_tracked(root))
        self.assertIn("rules/defs.bzl", paths)
        self.assertIn("tools/agent_gate/core/quorum.py", paths)
        found = findings(root, paths)
        self.assertEqual([], found, "\n".join(found))

    def test_each_kind_of_outside_citation_is_found(self) -> None:
        scratch = Path(self.create_tempdir().full_path)
        lines = {
            "design.py": "# See DESIGN §9 for the trust boundary.\n",
            "section.md": "As §4 says.\n",
            "issue.bzl": '"""Issue 13: the advice."""\n',
            "pr.py": "# fixed in PR #12\n",
            "notes.md": "See /work/shared/BAZEL_MODERN.md.\n",
            "article.py": "# the article's table\n",
        }
        for name, text in lines.items():
            (scratch / name).write_text(text)
        (scratch / "cited.py").write_text("# the article's table (docs/article.md)\n")
        found = findings(scratch, [*lines, "cited.py"])
        self.assertEqual(sorted(lines), sorted({line.split(":", 1)[0] for line in found}))

    def test_sealed_trees_and_the_definition_are_skipped(self) -> None:
        paths = ["fix/a.txt", "fix/fix.seal", "fixx/a.txt", "docs/article.md", "docs/x.md"]
        self.assertEqual(["fixx/a.txt", "docs/x.md"], _checked(paths))


if __name__ == "__main__":
    absltest.main()
