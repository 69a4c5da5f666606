"""The README's first plugin, run as it is written (its asserts are its test)."""

import pathlib
import re
import unittest


class ReadmeTests(unittest.TestCase):
    def test_the_first_plugin_runs_and_its_asserts_hold(self) -> None:
        readme = pathlib.Path(__file__).resolve().parent.parent / "README.md"
        blocks = re.findall(r"```python\n(.*?)```", readme.read_text(), re.S)
        self.assertEqual(len(blocks), 1, "one complete first plugin")
        namespace: dict = {"__name__": "greeter"}
        exec(compile(blocks[0], "README.md", "exec"), namespace)
        self.assertIn("Controller", namespace)


if __name__ == "__main__":
    unittest.main()
