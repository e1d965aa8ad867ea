#!/usr/bin/env python3
"""Unit tests of tools/profile_rig.py's memory levels, vector lanes and FMA pipes (no torch needed: a
stub stands in).

The sweep is a real one: tools/profile_rig.py on this project's 2-vCPU AMD EPYC VM,
2026-12-02 09:53 UTC (load 2.5), whose /sys has no cache directory; getconf gives L1d 48 KiB and
L2 1 MiB, and reports 508 MiB of L3 (a socket's), where the rate falls towards DRAM's past 25 MB.
"""
import os
import sys
import types
import unittest

sys.modules.setdefault("torch", types.SimpleNamespace(float32=0, float16=1, bfloat16=2, float64=3,
                                                     nn=types.SimpleNamespace(Module=object)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools"))
import profile_rig  # noqa: E402

SWEEP = [[98304, 187839601592], [196608, 190667515638], [393216, 177024037074],
         [786432, 129067769949], [1572864, 97108295616], [3145728, 84815476104],
         [6291456, 84749965671], [12582912, 66744193188], [25165824, 52013254592],
         [50331648, 48079747508], [100663296, 28381187009], [201326592, 30159096856]]
POINTS = [{"bytes": b, "byte_s": r} for b, r in SWEEP]
GETCONF = [{"level": 1, "bytes": 49152}, {"level": 2, "bytes": 1 << 20}]


class MemoryLevels(unittest.TestCase):
    def test_llc_from_the_sweep_where_the_kernel_gives_none(self):
        # Midway between 97.1 GB/s (first point past L2) and 28.4 (the slower of the two largest)
        # is 62.7: 25 MB is the first point below it, so the L3 ends at the 12.6 MB point.
        self.assertEqual(profile_rig.sweep_llc(POINTS, 1 << 20), 12582912)
        levels = profile_rig.memory_levels(POINTS, GETCONF)
        self.assertEqual([l["level"] for l in levels], ["L2", "L3", "DRAM"])
        self.assertEqual(levels[1]["bytes"], 12582912)
        # Lower medians: L2 of 98 K-393 K, L3 of 1.5-6.3 MB, DRAM of 25-201 MB.
        self.assertEqual([round(l["byte_s"] / 1e9, 1) for l in levels], [187.8, 84.8, 30.2])

    def test_a_reported_llc_is_kept(self):
        caches = GETCONF + [{"level": 3, "bytes": 32 << 20}]
        levels = profile_rig.memory_levels(POINTS, caches)
        self.assertEqual(levels[1]["bytes"], 32 << 20)
        self.assertEqual(levels[-1]["points"], 3)  # 50, 100 and 201 MB are past 1.25 x 32 MiB

    def test_too_few_points_or_no_caches(self):
        self.assertIsNone(profile_rig.sweep_llc(POINTS[:6], 1 << 20))
        levels = profile_rig.memory_levels(POINTS, [])
        self.assertEqual([l["level"] for l in levels], ["DRAM"])


class FirstLayerRows(unittest.TestCase):
    def test_a_first_layers_convolution_backward_is_marked_without_input_gradient(self):
        # Two backward convolutions as torch.profiler aggregates them: LeNet-5's conv1 (its input,
        # the image, needs no gradient) and conv2; and conv1's ReLU backward, which is not a
        # convolution and stays unmarked.
        def ev(key, shapes, us):
            return types.SimpleNamespace(key=key, input_shapes=shapes, count=4, cpu_time_total=4 * us)
        evs = [ev("aten::convolution_backward", [[32, 6, 28, 28], [32, 1, 28, 28], [6, 1, 5, 5]], 1130),
               ev("aten::convolution_backward", [[32, 16, 14, 14], [32, 6, 14, 14], [16, 6, 5, 5]], 900),
               ev("aten::threshold_backward", [[32, 6, 28, 28], [32, 6, 28, 28]], 80)]
        prof = types.SimpleNamespace(events=lambda: [], key_averages=lambda group_by_input_shape: evs)
        rows = []
        profile_rig.collect(prof, "cpu", rows, {}, {(32, 1, 28, 28)})
        self.assertEqual([r.get("input_grad") for r in rows], [False, None, None])
        self.assertEqual(rows[0]["mean_us"], 1130)
        self.assertIn(1, profile_rig.IMAGE_CHANNELS)
        self.assertIn(3, profile_rig.IMAGE_CHANNELS)


class VectorLanes(unittest.TestCase):
    def test_the_widest_float_vector_the_flags_name(self):
        # This project's 2-vCPU AMD EPYC VM (2026-12-02): AVX2 and FMA, no AVX-512 flag.
        epyc = "fpu vme de pse tsc msr pae mce cx8 sse sse2 ssse3 fma sse4_1 sse4_2 avx f16c avx2".split()
        self.assertEqual(profile_rig.vector_lanes(epyc), 8)
        self.assertEqual(profile_rig.vector_lanes(epyc + ["avx512f", "avx512dq"]), 16)
        self.assertEqual(profile_rig.vector_lanes(["fp", "asimd", "evtstrm"]), 4)  # an arm64 core


class FmaUnits(unittest.TestCase):
    def test_pipes_from_vendor_family_model_and_flags(self):
        # This project's VM (2026-12-02, /proc/cpuinfo): AuthenticAMD, family 23, model 49 (Zen 2,
        # two 256-bit FMA pipes), flags with fma and avx2.
        epyc = {"vendor_id": "AuthenticAMD", "cpu family": "23", "model": "49",
                "flags": "fpu sse sse2 ssse3 fma sse4_1 sse4_2 avx f16c avx2"}
        self.assertEqual(profile_rig.fma_units(epyc), 2)
        # Zen and Zen+ (family 23, models 1 and 8): 128-bit pipes, one 256-bit FMA a cycle.
        self.assertEqual(profile_rig.fma_units(dict(epyc, model="1")), 1)
        self.assertEqual(profile_rig.fma_units(dict(epyc, model="8")), 1)
        self.assertEqual(profile_rig.fma_units(dict(epyc, vendor_id="GenuineIntel", model="8")), 2)
        # Sandy Bridge (AVX, no fma): a multiply and an add a cycle.
        self.assertEqual(profile_rig.fma_units({"vendor_id": "GenuineIntel", "flags": "sse sse2 avx"}), 1)
        self.assertEqual(profile_rig.fma_units({"Features": "fp asimd evtstrm aes"}), 2)  # arm64
        self.assertEqual(profile_rig.fma_units({}), 1)


if __name__ == "__main__":
    unittest.main()
