"""Weak: every relative link from one doc to another doc points at a doc that exists.

Links to source files and directories are not in the test's runfiles; only links
between Markdown files are checked here.
"""

import os
import re
from pathlib import Path

from absl.testing import absltest

LINK = re.compile(r"\]\(([^)#\s]+\.md)(?:#[^)]*)?\)")
DOCS = [
    Path("README.md"),
    Path("CHANGELOG.md"),
    *sorted(Path("docs").glob("*.md")),
    *sorted(Path("bench").glob("*.md")),
]


class DocsLinksTest(absltest.TestCase):
    def test_links_between_docs_resolve(self):
        self.assertGreater(len(DOCS), 2, "the docs filegroup is missing from runfiles")
        known = {os.path.normpath(doc) for doc in DOCS}
        broken = []
        for doc in DOCS:
            for target in LINK.findall(doc.read_text(encoding="utf-8")):
                if "://" in target:
                    continue
                resolved = os.path.normpath(doc.parent / target)
                if not resolved.startswith("..") and resolved not in known:
                    broken.append(f"{doc}: {target}")
        self.assertEqual(broken, [])


if __name__ == "__main__":
    absltest.main()
