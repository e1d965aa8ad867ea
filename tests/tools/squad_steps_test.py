#!/usr/bin/env python3
"""tools/squad_steps.py on Lambda's one-GPU SQuAD logs (tests/data/lambda_squad_steps.csv): the
figures docs/validation.md ("Lambda's one-GPU SQuAD runs step by step") quotes, and the check that
each published row states the batch its run's log ran."""
import os
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
TOOL = os.path.join(ROOT, "tools", "squad_steps.py")
DATA = os.path.join(ROOT, "tests", "data", "lambda_squad_steps.csv")
PUBLISHED = os.path.join(ROOT, "tests", "data", "published_throughput.csv")


def run(*args):
    return subprocess.run([sys.executable, TOOL] + list(args), capture_output=True, text=True,
                          check=False)


def run_on_copy(flag, path, edit):
    """The tool with `flag` pointing at a copy of `path` that `edit` (text -> text) changed."""
    with open(path) as src:
        text = edit(src.read())
    with tempfile.NamedTemporaryFile("w", suffix=".csv", delete=False) as f:
        f.write(text)
    try:
        return run(flag, f.name)
    finally:
        os.unlink(f.name)


def rows(out):
    return {tuple(l.split()[:-5]): l.split()[-5:] for l in out.stdout.splitlines()[1:]}


class SquadSteps(unittest.TestCase):
    def test_steady_state_steps(self):
        out = run()
        self.assertEqual(out.returncode, 0, out.stderr)
        r = rows(out)
        # batch, steady-state ms a step, its two halves, the one-off share of e2e_train_time
        self.assertEqual(r["bert-large-squad-lambda", "LambdaCloud", "A10", "TF32"],
                         ["12", "602.4", "602.9", "601.9", "2.9%"])
        self.assertEqual(r["bert-base-squad-lambda", "LambdaCloud", "A10", "AMP"],
                         ["80", "574.1", "573.0", "575.2", "2.9%"])
        self.assertEqual(r["bert-large-squad-lambda", "Lambda", "RTX", "6000", "Ada", "AMP"],
                         ["64", "796.3", "772.3", "820.4", "1.7%"])
        self.assertEqual(len(r), 10)

    def test_row_with_another_batch_is_refused(self):
        # The A10 TF32 BERT-large row as it stood before (batch 16, the 24 GB config's) against
        # its log's --train_batch_size=12.
        row = "bert-large-squad-lambda,LambdaCloud A10,lambdacloud-a10,1,TF32,"
        out = run_on_copy("--published", PUBLISHED,
                          lambda t: t.replace(row + "12,", row + "16,"))
        self.assertNotEqual(out.returncode, 0)
        self.assertIn("LambdaCloud A10 TF32: the row states batch 16, the run's log 12", out.stderr)

    def test_bad_input(self):
        out = run("--data", os.path.join(ROOT, "no_such.csv"))
        self.assertNotEqual(out.returncode, 0)
        self.assertIn("no_such.csv: no such file", out.stderr)
        out = run_on_copy("--data", DATA, lambda t: t.replace(",AMP,80,100,", ",AMP,96,100,"))
        self.assertNotEqual(out.returncode, 0)
        self.assertIn("135.343 seq/s x 59.109 s / 100 steps is not batch 96", out.stderr)


if __name__ == "__main__":
    unittest.main()
