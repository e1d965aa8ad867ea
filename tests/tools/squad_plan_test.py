#!/usr/bin/env python3
"""tools/squad_plan.py: the steps run_squad.py runs under Lambda's harness, against Lambda's logs
(docs/validation.md, "Lambda's 8-GPU BERT-base AMP rows count 100 steps for 70")."""
import os
import subprocess
import sys
import unittest

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
sys.path.insert(0, os.path.join(ROOT, "tools"))
import squad_plan  # noqa: E402


class SquadSteps(unittest.TestCase):
    def test_eight_gpus_at_320_end_both_epochs_after_70_steps(self):
        # lambdal/deeplearning-benchmark @ e65ebf70 : pytorch/results/8xA100_80GB_SXM4_v1/
        # PyTorch_bert_base_squad_FP16/19-11-2022_22-56-19.txt: "0/35" a epoch, two epochs,
        # e2e_train_time 59.898 s, training_sequences_per_second 4273.93.
        run = squad_plan.steps_run(8, 320)
        self.assertEqual(run, {320: 68, 201: 2})
        figure = 320 * squad_plan.counted_steps() * 8 / 59.898085832595825
        self.assertAlmostEqual(figure, 4273.926227216561, places=3)
        # The figure counts 100 full steps where 70 ran, two of them partial.
        self.assertAlmostEqual(squad_plan.counted_steps() / sum(run.values()), 100 / 70)

    def test_runs_that_reach_max_steps_run_101(self):
        # The 8-GPU BERT-large TF32 log (same commit, PyTorch_bert_large_squad_FP32/
        # 19-11-2022_22-03-33.txt) stops at "101/174".
        self.assertEqual(squad_plan.steps_run(8, 64), {64: 101})
        self.assertEqual(squad_plan.steps_run(1, 320), {320: 101})
        # An epoch's partial last batch inside the 101 steps (8 x 172: 65 steps an epoch).
        self.assertEqual(squad_plan.steps_run(8, 172), {172: 100, 73: 1})
        self.assertEqual(squad_plan.steps_run(4, 320), {320: 100, 81: 1})

    def test_exposed_undoes_the_count(self):
        # A table row as published_throughput_test.sh prints it: 8 x 320 AMP, 4,273 published.
        import tempfile
        with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as f:
            f.write("| bert-base-squad-lambda | Lambda A100 80GB SXM4 | 8 | AMP | 320 | 4,273 | "
                    "5,111.1 | sequences/s | +19.6 % | `placesim ...` |\n")
        try:
            (row,) = squad_plan.exposed(f.name)
        finally:
            os.unlink(f.name)
        # 2560 x 100 / 4273 / 70 = 855.9 ms a run step, the log's 1.19-1.20 it/s; F16 gradients.
        self.assertAlmostEqual(row[4], 855.9, places=1)
        self.assertAlmostEqual(row[5], 715.5, places=1)
        self.assertAlmostEqual(row[6], (855.9 - 715.5) / 0.218977, delta=1.0)

    def test_bad_input_and_cli(self):
        with self.assertRaises(ValueError):
            squad_plan.steps_run(0, 320)
        out = subprocess.run([sys.executable, os.path.join(ROOT, "tools", "squad_plan.py"), "8",
                              "320"], capture_output=True, text=True, check=False)
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertIn("68 steps of 320, 2 steps of 201 (70 steps)", out.stdout)


if __name__ == "__main__":
    unittest.main()
