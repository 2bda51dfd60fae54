"""The FixtureSeal action reads file names back as the bytes the file system holds."""

import io
import os
import tempfile
from contextlib import redirect_stderr
from pathlib import Path

from absl.testing import absltest

from agent_gate.actions import seal_files_main
from agent_gate.formats import params_names, seal

PROBE = "é".encode()
NAMES = [
    "fx/café".encode(),
    "fx/日本/名前.txt".encode(),
    b"fx/-leading-dash",
    b"fx/plain.txt",
    "fx/emoji 😀".encode(),
]


def as_bazel_4_writes(line: bytes) -> bytes:
    """Bazel 4.2.3's params file: every byte a Latin-1 character, each written as UTF-8."""
    return line.decode("latin-1").encode("utf-8")


class DecodeNamesTest(absltest.TestCase):
    def test_bytes_written_as_they_are_come_back_as_they_are(self):
        params = b"\n".join([PROBE, *NAMES, b"fx/raw\xff"]) + b"\n"
        self.assertEqual([*NAMES, b"fx/raw\xff"], params_names.decode_names(params, PROBE))

    def test_double_encoded_names_come_back_as_the_original_bytes(self):
        lines = [PROBE, *NAMES, b"fx/raw\xff"]
        params = b"\n".join(as_bazel_4_writes(line) for line in lines) + b"\n"
        self.assertNotEqual(params.split(b"\n")[1], NAMES[0])  # really double-encoded
        self.assertEqual([*NAMES, b"fx/raw\xff"], params_names.decode_names(params, PROBE))

    def test_an_unknown_writing_of_the_probe_is_refused(self):
        for written in (b"?", b"e", "é".encode("latin-1"), b""):
            with (
                self.subTest(written=written),
                self.assertRaisesRegex(params_names.ParamsError, "cannot be read back"),
            ):
                params_names.decode_names(written + b"\nfx/a\n", PROBE)

    def test_a_name_that_is_not_double_encoded_like_the_probe_is_refused(self):
        params = as_bazel_4_writes(PROBE) + b"\nfx/raw\xff\n"
        with self.assertRaisesRegex(params_names.ParamsError, "raw"):
            params_names.decode_names(params, PROBE)

    def test_an_ascii_probe_or_an_empty_file_is_refused(self):
        with self.assertRaisesRegex(params_names.ParamsError, "non-ASCII"):
            params_names.decode_names(b"e\n", b"e")
        with self.assertRaisesRegex(params_names.ParamsError, "empty"):
            params_names.decode_names(b"", PROBE)


class SealFilesMainTest(absltest.TestCase):
    def setUp(self):
        super().setUp()
        self.repo = Path(tempfile.mkdtemp(dir=absltest.get_default_test_tmpdir()))
        for index, name in enumerate(NAMES):
            path = os.path.join(os.fsencode(self.repo), name)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "wb") as handle:
                handle.write(b"content %d\r\nno final newline" % index)

    def run_main(self, params: bytes) -> tuple[int, str]:
        params_path = self.repo / "names.params"
        params_path.write_bytes(params)
        out = self.repo / "out.seal"
        stderr = io.StringIO()
        with redirect_stderr(stderr):
            code = seal_files_main.main(
                [
                    "--out",
                    str(out),
                    "--repo_root",
                    str(self.repo),
                    "--names_probe",
                    os.fsdecode(PROBE),
                    f"@{params_path}",
                ]
            )
        return code, out.read_text() if code == 0 else stderr.getvalue()

    def test_both_writings_seal_like_the_tree(self):
        expected = seal.seal_line(seal.seal_tree(self.repo, "fx"))
        faithful = b"\n".join([PROBE, *NAMES]) + b"\n"
        double = b"\n".join(as_bazel_4_writes(line) for line in [PROBE, *NAMES]) + b"\n"
        self.assertEqual((0, expected), self.run_main(faithful))
        self.assertEqual((0, expected), self.run_main(double))

    def test_a_misread_params_file_fails_with_a_message(self):
        code, message = self.run_main(b"?\nfx/plain.txt\n")
        self.assertEqual(1, code)
        self.assertIn("agent_gate: FixtureSeal:", message)
        self.assertIn("bazel --version", message)


if __name__ == "__main__":
    absltest.main()
