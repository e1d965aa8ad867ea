#!/usr/bin/env python3
"""Unit tests of tools/cpu_closed_loop.py's op classes and --rows manifest (no torch, no placesim)."""
import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools"))
import cpu_closed_loop  # noqa: E402


def matmul(a, b, out):
    return {"type": "MatMul", "signature": {"input_shapes": [a, b]}, "outputs": [{"shape": out}]}


class Classes(unittest.TestCase):
    def test_batched_products_apart_from_linear_layers(self):
        # The transformer encoder's ONNX graph (tools/profile_rig.py --model transformer --batch 8):
        # attention scores, a 3-D linear layer, and that layer's weight gradient, which contracts
        # over batch and tokens into one [d, m] matrix (sim::gemm_matrices: one GEMM).
        g = cpu_closed_loop.graph_class
        self.assertEqual(g(matmul([32, 64, 16], [32, 16, 64], [32, 64, 64])), "gemm: batched")
        self.assertEqual(g(matmul([8, 64, 64], [64, 256], [8, 64, 256])), "gemm")
        self.assertEqual(g(matmul([8, 64, 64], [8, 64, 256], [64, 256])), "gemm")
        self.assertEqual(g({"type": "Conv", "signature": {"input_shapes": [[8, 3, 32, 32]]}}), "conv")
        c = cpu_closed_loop.classify
        self.assertEqual(c("autograd::engine::evaluate_function: BmmBackward0", cpu_closed_loop.TORCH_CLASSES),
                         "gemm: batched")
        self.assertEqual(c("autograd::engine::evaluate_function: AddmmBackward0", cpu_closed_loop.TORCH_CLASSES),
                         "gemm")
        self.assertEqual(c("aten::bmm", cpu_closed_loop.TORCH_CLASSES), "gemm: batched")


class Rows(unittest.TestCase):
    def test_another_runs_rows_with_this_runs_step(self):
        cold = {"device_model": "cpu0", "vector_lanes": 16, "cold_operands": True, "ops": [{"name": "a"}],
                "models": ["step"], "memory_levels": ["L2"]}
        hot = dict(cold, cold_operands=False, ops=[{"name": "b"}], models=["other step"], memory_levels=["x"])
        m = cpu_closed_loop.rows_manifest(cold, hot)
        self.assertEqual(m["ops"], [{"name": "b"}])
        self.assertFalse(m["cold_operands"])
        self.assertEqual((m["models"], m["memory_levels"]), (["step"], ["L2"]))
        self.assertEqual(cold["ops"], [{"name": "a"}])  # not changed in place
        self.assertIsNone(cpu_closed_loop.rows_manifest(cold, dict(hot, vector_lanes=8)))
        self.assertIsNone(cpu_closed_loop.rows_manifest(cold, dict(hot, device_model="cpu1")))


if __name__ == "__main__":
    unittest.main()
