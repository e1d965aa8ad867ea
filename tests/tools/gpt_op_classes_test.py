#!/usr/bin/env python3
"""tools/gpt_op_classes.py on the H200 GPT-2 traces whose per-class figures docs/validation.md
("LayerNorm per row") and sim/cost_model.cpp's LayerNorm rule quote."""
import json
import os
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
TOOL = os.path.join(ROOT, "tools", "gpt_op_classes.py")
DATA = os.path.join(ROOT, "tests", "data", "calibration")


def kernel(op, op_type, dur):
    return {"ph": "X", "cat": "kernel", "name": op, "dur": dur, "ts": 0, "pid": 1, "tid": 1,
            "args": {"op": op, "op type": op_type}}


# A simulated trace in `simulate --trace`'s form: one kernel per class the rules must tell apart.
SIM = {"traceEvents": [
    kernel("gpt/head/lm_head", "MatMul", 1000.0),
    kernel("gpt/h0/attn/c_attn/MatMul", "MatMul", 100.0),
    kernel("gpt/h0/attn/scores", "BatchMatMul", 10.0),
    kernel("gpt/h0/attn/flash_attention", "FlashAttention", 20.0),
    kernel("gpt/h0/attn/ln_1", "LayerNorm", 30.0),
    kernel("gradients/gpt/h0/attn/ln_1_grad/LayerNormGrad", "LayerNormGrad", 40.0),
    kernel("gpt/head/xent", "SparseSoftmaxCrossEntropyWithLogits", 50.0),
    kernel("gradients/gpt/head/xent_grad/SparseSoftmaxCrossEntropyWithLogitsGrad",
           "SparseSoftmaxCrossEntropyWithLogitsGrad", 60.0),
    kernel("gpt/h0/mlp/gelu", "Gelu", 7.0),
    # attention=flash's backward copies: the stack of dQ, dK, dV and the permuted copy.
    kernel("gradients/gpt/h0/attn/unbind_qkv_grad/Stack", "Stack", 3.0),
    kernel("gradients/gpt/h0/attn/qkv_heads_grad/Transpose", "Transpose", 2.0),
    kernel("gpt/h0/attn/c_attn/w", "VariableV2", 0.0),
]}


def run(trace, sim):
    out = subprocess.run([sys.executable, TOOL, trace, sim], capture_output=True, text=True,
                         check=False)
    rows = {}
    for line in out.stdout.splitlines():
        c = line.split()
        if len(c) == 4 and c[0] != "class":
            rows[c[0]] = (float(c[1]), float(c[2]), c[3])
    return out, rows


class GptOpClasses(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.sim = os.path.join(self.dir.name, "sim.json")
        with open(self.sim, "w") as f:
            json.dump(SIM, f)

    def tearDown(self):
        self.dir.cleanup()

    def test_sdpa_trace(self):
        out, rows = run(os.path.join(DATA, "h200_gpt2-124m_sdpa_bf16_b8_train.json.gz"), self.sim)
        self.assertEqual(out.returncode, 0, out.stderr)
        # 3 profiled steps: the three align1 lm_head GEMMs, 6.62 + 4.53 + 4.31 ms a step.
        self.assertEqual(rows["lm_head"][0], 15463.7)
        # 25 LayerNorms a step: 473.5 + 714.4 + 382.7 us (forward, gamma/beta, input gradient).
        self.assertEqual(rows["layernorm"][0], 1570.6)
        # cuDNN's fused SDPA (fprop, bprop, dot(dO, O), dQ conversion, Philox unpack).
        self.assertEqual(rows["attention"][0], 3351.8)
        # cunn_SoftMax forward 551.8 + backward 769.4, the logits' gradient fill 242.5, nll 30.5.
        self.assertEqual(rows["softmax_loss"][0], 1594.3)
        # embedding_dense_backward's kernels, its [50257, 768] zero fill (23.6) included, and the
        # forward's gathers.
        self.assertEqual(rows["embedding"][0], 252.3)
        self.assertEqual(rows["update"][0], 997.6)
        # Predicted side, classed by op type and name.
        self.assertEqual(rows["lm_head"][1], 1000.0)
        self.assertEqual(rows["gemm"][1], 100.0)
        self.assertEqual(rows["attention"][1], 30.0)
        self.assertEqual(rows["layernorm"][1], 70.0)
        self.assertEqual(rows["softmax_loss"][1], 110.0)
        self.assertEqual(rows["gelu"][1], 7.0)
        self.assertEqual(rows["copy"][1], 5.0)

    def test_eager_trace_puts_bmm_and_small_softmax_in_attention(self):
        out, rows = run(os.path.join(DATA, "h200_gpt2-124m_eager_bf16_b8_train.json.gz"), self.sim)
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertEqual(rows["lm_head"][0], 15468.9)
        self.assertEqual(rows["attention"][0], 9306.2)
        self.assertEqual(rows["softmax_loss"][0], 1592.8)

    def test_bad_input_is_one_line_naming_the_file(self):
        bad = os.path.join(self.dir.name, "bad.json")
        with open(bad, "w") as f:
            f.write("{}")
        out, _ = run(bad, self.sim)
        self.assertNotEqual(out.returncode, 0)
        self.assertEqual(len(out.stderr.strip().splitlines()), 1, out.stderr)
        self.assertIn("bad.json", out.stderr)
        out, _ = run(os.path.join(DATA, "h200_gpt2-124m_sdpa_bf16_b8_train.json.gz"), bad)
        self.assertNotEqual(out.returncode, 0)
        self.assertIn("bad.json", out.stderr)


if __name__ == "__main__":
    unittest.main()
