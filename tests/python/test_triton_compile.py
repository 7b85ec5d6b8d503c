# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 the blocktune authors
"""Tests of the Triton compile pool (python/blocktune/triton_compile.py) with no GPU: Triton
compiles examples/triton/ for sm_90 and the answers' metadata, errors and cache are checked.
Run by tests/python/triton.sh (ctest: python_triton), which skips visibly without Triton."""
import json
import os
import subprocess
import sys
import tempfile
import threading
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "python"))
from blocktune import triton_job  # noqa: E402  (the pure helpers; no Triton needed to import)

EX = os.path.join(ROOT, "examples", "triton")
H200_SMEM = 232448

try:
    import triton  # noqa: F401
    HAVE_TRITON = True
except ImportError:
    HAVE_TRITON = False


def run_pool(lines, workers=1, env=None, args=()):
    """Feed request lines to a fresh pool; return (hello, {id: answer}, [answers], exit)."""
    penv = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python"), **(env or {}))
    text = "".join((l if isinstance(l, str) else json.dumps(l)) + "\n" for l in lines)
    p = subprocess.run([sys.executable, *args, "-m", "blocktune.triton_compile",
                        "--workers", str(workers)], input=text, capture_output=True, text=True,
                       env=penv, timeout=900)
    out = [json.loads(l) for l in p.stdout.splitlines()]
    if not out:
        raise AssertionError(f"no output; stderr:\n{p.stderr[-3000:]}")
    answers = out[1:]
    return out[0], {a["id"]: a for a in answers}, answers, p.returncode


def vector_add(rid, cache, block=1024, n=1 << 20, **kw):
    return dict({"id": rid, "source": os.path.join(EX, "vector_add.py"),
                 "entry": "vector_add_kernel", "target": "sm_90",
                 "signature": {"x_ptr": "*fp32", "y_ptr": "*fp32", "out_ptr": "*fp32"},
                 "divisible_by_16": ["x_ptr", "y_ptr", "out_ptr"], "specialize": {"n": n},
                 "constexprs": {"BLOCK": block}, "num_warps": 4, "cache_dir": cache}, **kw)


MM_SIG = {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp16", "M": "i32", "N": "i32",
          "K": "i32", "stride_am": "i32", "stride_bk": "i32", "stride_cm": "i32"}


def matmul(rid, cache, bm, bn, bk, warps, stages, **kw):
    """Row-major fp16 GEMM with every size a multiple of 16 (Triton's JIT would mark them all
    divisible by 16, and the unit strides constant)."""
    return dict({"id": rid, "source": os.path.join(EX, "matmul.py"), "entry": "matmul_kernel",
                 "target": "sm_90", "signature": MM_SIG,
                 "constexprs": {"stride_ak": 1, "stride_bn": 1, "stride_cn": 1, "BLOCK_M": bm,
                                "BLOCK_N": bn, "BLOCK_K": bk, "GROUP_M": 8},
                 "divisible_by_16": sorted(MM_SIG), "num_warps": warps, "num_stages": stages,
                 "cache_dir": cache}, **kw)


def smem_model(bm, bn, bk, stages, elem=2):
    """The seeds' shared-memory rule: one A and one B tile per pipeline stage."""
    return stages * (bm * bk + bk * bn) * elem


class Helpers(unittest.TestCase):
    """The pure parts, no compile."""

    def test_ptx_param_sizes(self):
        ptx = (".visible .entry k(\n\t.param .u64 .ptr .global .align 1 k_param_0,\n"
               "\t.param .u8 k_param_1,\n\t.param .align 2 .b8 k_param_2[2],\n"
               "\t.param .f32 k_param_3,\n\t.param .u64 .ptr .global .align 1 k_param_4\n)")
        self.assertEqual(triton_job.ptx_param_sizes(ptx), [8, 1, 2, 4, 8])
        self.assertIsNone(triton_job.ptx_param_sizes("// no entry here"))

    def test_parse_target(self):
        for t in ("sm_90", "sm90", "cuda:90", "sm_90a", 90):
            self.assertEqual(triton_job.parse_target(t), 90)
        with self.assertRaises(triton_job.RequestError):
            triton_job.parse_target("gfx942")

    def test_resource_check_registers(self):
        base = {"shared": 0, "tmem_size": 0, "num_warps": 8}
        r = {"max_shared": None, "arch": 90}
        # 255 registers round up to 256 per thread: 256 * 256 threads = 65536, just fits.
        self.assertIsNone(triton_job.resource_check(dict(base, registers=255), r))
        over = triton_job.resource_check(dict(base, registers=255, num_warps=16), r)
        self.assertEqual((over["resource"], over["required"], over["limit"]),
                         ("registers", 131072, 65536))
        over = triton_job.resource_check(dict(base, registers=32, shared=H200_SMEM + 1), r)
        self.assertEqual((over["kind"], over["resource"], over["limit"]),
                         ("out_of_resources", "shared memory", H200_SMEM))


@unittest.skipUnless(HAVE_TRITON, "triton is not importable")
class Compile(unittest.TestCase):
    """One cold pool run over many requests, then the same requests again (the cache)."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory(prefix="bt-triton-test-")
        c = cls.cache = cls.tmp.name
        cls.reqs = [
            vector_add("va", c), vector_add("va_n1", c, n=1), vector_add("va_i64", c, n=1 << 40),
            vector_add("va_nreg", c, maxnreg=24), vector_add("va_ctas", c, num_ctas=2),
            vector_add("va_err", c, block=1000),
            matmul("mm_s2", c, 64, 64, 32, 4, 2), matmul("mm_s3", c, 64, 64, 32, 4, 3),
            matmul("mm_s4", c, 64, 64, 32, 4, 4), matmul("mm_128_s3", c, 128, 128, 32, 4, 3),
            matmul("mm_oor", c, 64, 256, 128, 4, 4),
            {"id": "sm", "source": os.path.join(EX, "softmax.py"), "entry": "softmax_kernel",
             "target": "sm_90", "signature": {"out_ptr": "*fp32", "in_ptr": "*fp32",
                                              "in_row_stride": "i32", "out_row_stride": "i32",
                                              "n_cols": "i32"},
             "constexprs": {"BLOCK": 1024}, "num_warps": 8, "cache_dir": c},
        ]
        bad = [
            dict(vector_add("bad_noconst", c), constexprs={}),
            dict(vector_add("bad_entry", c), entry="no_such_kernel"),
            dict(vector_add("bad_field", c), num_wraps=4),
            dict(vector_add("bad_type", c), signature=dict(vector_add("", c)["signature"],
                                                           x_ptr="tensordesc<fp32[16]>")),
            dict(vector_add("bad_file", c), source=os.path.join(c, "missing.py")),
            dict(vector_add("bad_timeout", c), timeout_s="soon"),
        ]
        cls.hello, cls.a, cls.order, cls.rc = run_pool(cls.reqs + bad + ["{not json"], workers=2)
        cls.stamps = {p: os.stat(p).st_mtime_ns for p in cls.files()}
        again = cls.reqs + [matmul("mm_s3_small", c, 64, 64, 32, 4, 3, max_shared=16384)]
        cls.hello2, cls.b, _, cls.rc2 = run_pool(again, workers=1)

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    @classmethod
    def files(cls):
        return sorted(os.path.join(d, f) for d, _, fs in os.walk(cls.cache) for f in fs)

    def test_hello_and_exit(self):
        self.assertEqual(self.rc, 0)
        self.assertEqual(self.hello["ready"], True)
        self.assertEqual(self.hello["protocol"], 1)
        self.assertEqual(self.hello["triton_version"], triton.__version__)
        self.assertEqual(self.hello["workers"], 2)
        self.assertEqual(len(self.order), len(self.reqs) + 7)  # every request answered once

    def test_vector_add(self):
        a = self.a["va"]
        self.assertTrue(a["ok"], a.get("error"))
        self.assertFalse(a["cached"])
        self.assertEqual(a["kernel"], "vector_add_kernel")
        self.assertEqual((a["num_warps"], a["block"], a["cluster_dims"]), (4, [128, 1, 1], [1, 1, 1]))
        self.assertEqual(a["ptx_target"], "sm_90a")
        self.assertGreater(a["registers"], 0)
        self.assertEqual((a["spill_stores"], a["spill_loads"]), (0, 0))
        self.assertEqual([(x["name"], x["ctype"]) for x in a["launch_args"]],
                         [("x_ptr", "CUdeviceptr"), ("y_ptr", "CUdeviceptr"),
                          ("out_ptr", "CUdeviceptr"), ("n", "int32_t"),
                          ("global_scratch", "CUdeviceptr"), ("profile_scratch", "CUdeviceptr")])
        self.assertEqual(a["divisible_by_16"], ["n", "out_ptr", "x_ptr", "y_ptr"])
        with open(a["cubin"], "rb") as f:
            elf = f.read()
        self.assertEqual(elf[:4], b"\x7fELF")
        self.assertEqual(int.from_bytes(elf[18:20], "little"), 190)  # e_machine EM_CUDA
        self.assertIn(b"vector_add_kernel", elf)

    def test_specialization_follows_triton(self):
        # n == 1 becomes a constant (not a parameter), n >= 2^31 an i64, as Triton's JIT does.
        n1, big = self.a["va_n1"], self.a["va_i64"]
        self.assertTrue(n1["ok"] and big["ok"], (n1.get("error"), big.get("error")))
        self.assertEqual(n1["constexprs"], {"BLOCK": 1024, "n": 1})
        self.assertNotIn("n", [x["name"] for x in n1["launch_args"]])
        self.assertEqual([x for x in big["launch_args"] if x["name"] == "n"],
                         [{"name": "n", "type": "i64", "ctype": "int64_t", "size": 8}])

    def test_options(self):
        nreg, ctas = self.a["va_nreg"], self.a["va_ctas"]
        self.assertTrue(nreg["ok"] and ctas["ok"], (nreg.get("error"), ctas.get("error")))
        self.assertEqual(nreg["maxnreg"], 24)
        self.assertLessEqual(nreg["registers"], 24)
        self.assertGreater(self.a["va"]["registers"], 24)  # so the cap did something
        self.assertEqual((ctas["num_ctas"], ctas["cluster_dims"]), (2, [2, 1, 1]))
        self.assertNotEqual(ctas["key"], self.a["va"]["key"])

    def test_matmul_shared_memory_grows(self):
        s = [self.a[f"mm_s{n}"] for n in (2, 3, 4)]
        for x in s + [self.a["mm_128_s3"]]:
            self.assertTrue(x["ok"], x.get("error"))
        smem = [x["shared"] for x in s]
        self.assertLess(smem[0], smem[1])
        self.assertLess(smem[1], smem[2])
        for x, stages in zip(s, (2, 3, 4)):
            self.assertGreaterEqual(x["shared"], smem_model(64, 64, 32, stages))
        self.assertGreater(self.a["mm_128_s3"]["shared"], smem[1])
        self.assertGreaterEqual(self.a["mm_128_s3"]["shared"], smem_model(128, 128, 32, 3))
        self.assertEqual(len(s[0]["launch_args"]), len(MM_SIG) + 2)

    def test_out_of_resources(self):
        a = self.a["mm_oor"]
        self.assertFalse(a["ok"])
        e = a["error"]
        self.assertEqual((e["kind"], e["resource"], e["limit"]),
                         ("out_of_resources", "shared memory", H200_SMEM))
        self.assertGreaterEqual(e["required"], smem_model(64, 256, 128, 4))
        self.assertEqual(a["shared"], e["required"])  # the metadata comes with the error
        self.assertIn("shared memory", e["message"])

    def test_softmax(self):
        a = self.a["sm"]
        self.assertTrue(a["ok"], a.get("error"))
        self.assertEqual(a["block"], [256, 1, 1])
        self.assertGreater(a["shared"], 0)  # the cross-warp max and sum go through shared memory

    def test_compile_error(self):
        a = self.a["va_err"]
        self.assertFalse(a["ok"])
        self.assertEqual(a["error"]["kind"], "compile_error")
        self.assertIn("power of 2", a["error"]["message"])

    def test_bad_requests(self):
        want = {"bad_noconst": "\"BLOCK\"", "bad_entry": "no_such_kernel",
                "bad_field": "num_wraps", "bad_type": "tensordesc", "bad_file": "missing.py",
                "bad_timeout": "timeout_s"}
        for rid, word in want.items():
            a = self.a[rid]
            self.assertEqual((a["ok"], a["error"]["kind"]), (False, "bad_request"), rid)
            self.assertIn(word, a["error"]["message"], rid)
        self.assertEqual(self.a[None]["error"]["kind"], "bad_request")  # the non-JSON line

    def test_cache_second_run_compiles_nothing(self):
        self.assertEqual(self.rc2, 0)
        for r in self.reqs:
            first, second = self.a[r["id"]], self.b[r["id"]]
            self.assertTrue(second["cached"], r["id"])
            for k in first:
                if k != "cached":
                    self.assertEqual(first[k], second[k], (r["id"], k))
        # Nothing was written: the same files, untouched (one new request added one .json).
        now = {p: os.stat(p).st_mtime_ns for p in self.files()}
        self.assertEqual({p: now[p] for p in self.stamps}, self.stamps)

    def test_limit_applies_to_cached_metadata(self):
        a = self.b["mm_s3_small"]
        self.assertTrue(a["cached"])  # the key ignores the limit: same compile as mm_s3
        self.assertEqual((a["ok"], a["error"]["kind"], a["error"]["limit"]),
                         (False, "out_of_resources", 16384))


@unittest.skipUnless(HAVE_TRITON, "triton is not importable")
class Pool(unittest.TestCase):
    """Workers that die or run too long are answered for and replaced."""

    def test_crash_and_timeout(self):
        with tempfile.TemporaryDirectory(prefix="bt-triton-test-") as c:
            dying = os.path.join(c, "dying.py")
            with open(dying, "w") as f:
                f.write("import os, signal\nos.kill(os.getpid(), signal.SIGKILL)\n")
            reqs = [dict(vector_add("crash", c), source=dying),
                    matmul("slow", c, 128, 128, 64, 8, 3, timeout_s=0.2),
                    vector_add("after", c)]
            hello, a, order, rc = run_pool(reqs, workers=1)
        self.assertEqual(rc, 0)
        self.assertEqual([x["id"] for x in order], ["crash", "slow", "after"])
        self.assertEqual(a["crash"]["error"]["kind"], "crashed")
        self.assertIn("signal 9", a["crash"]["error"]["message"])
        self.assertEqual(a["slow"]["error"]["kind"], "timeout")
        self.assertTrue(a["after"]["ok"], a["after"].get("error"))

    def test_client_may_write_everything_before_reading(self):
        """400 answers (~600 KB) exceed any pipe buffer: the pool must keep reading stdin while
        nobody reads its stdout."""
        with tempfile.TemporaryDirectory(prefix="bt-triton-test-") as c:
            text = "".join(json.dumps(vector_add(i, c)) + "\n" for i in range(400)).encode()
            p = subprocess.Popen([sys.executable, "-m", "blocktune.triton_compile", "--workers",
                                  "1"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                 env=dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python")))
            killer = threading.Timer(300, p.kill)
            killer.start()
            try:
                p.stdin.write(text)  # blocks for good if the pool stops reading
                p.stdin.close()
                lines = p.stdout.read().decode().splitlines()
            finally:
                killer.cancel()
            self.assertEqual(p.wait(), 0)
        answers = [json.loads(l) for l in lines[1:]]
        self.assertEqual(sorted(a["id"] for a in answers), list(range(400)))
        self.assertTrue(all(a["ok"] for a in answers))
        self.assertEqual(sum(not a["cached"] for a in answers), 1)

    def test_helper_in_a_neighbour_file(self):
        """A kernel may import @jit helpers from files beside it; editing one recompiles."""
        with tempfile.TemporaryDirectory(prefix="bt-triton-test-") as c:
            def write(name, text):
                with open(os.path.join(c, name), "w") as f:
                    f.write("import triton\nimport triton.language as tl\n" + text)
            write("bt_helper.py", "@triton.jit\ndef scale(x):\n    return x * 2\n")
            write("k.py", "from bt_helper import scale\n\n\n@triton.jit\n"
                          "def k(p, BLOCK: tl.constexpr):\n"
                          "    o = tl.arange(0, BLOCK)\n"
                          "    tl.store(p + o, scale(tl.load(p + o)))\n")
            req = {"id": "k", "source": os.path.join(c, "k.py"), "entry": "k",
                   "target": "sm_90", "signature": {"p": "*fp32"},
                   "constexprs": {"BLOCK": 128}, "cache_dir": c}
            first = run_pool([req])[1]["k"]
            write("bt_helper.py", "@triton.jit\ndef scale(x):\n    return x * 3\n")
            second = run_pool([req])[1]["k"]
        self.assertTrue(first["ok"] and second["ok"], (first.get("error"), second.get("error")))
        self.assertFalse(second["cached"])
        self.assertNotEqual(first["key"], second["key"])

    def test_events_and_files(self):
        # --events: the workers (importing Triton when they start) say when they are ready, in
        # a line with no id; the hello names the files that say which Triton this is; at end
        # of input the pool ends its workers and exits.
        p = subprocess.Popen([sys.executable, "-m", "blocktune.triton_compile", "--workers", "2",
                              "--events"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             text=True, env=dict(os.environ,
                                                 PYTHONPATH=os.path.join(ROOT, "python")))
        try:
            hello = json.loads(p.stdout.readline())
            event = json.loads(p.stdout.readline())  # nothing else is asked: the event is next
            p.stdin.close()
            self.assertEqual(p.wait(timeout=60), 0)
        finally:
            p.kill()
            p.wait()
            p.stdout.close()
        self.assertTrue(any(f.endswith(os.path.join("triton", "__init__.py"))
                            for f in hello["files"]), hello["files"])
        self.assertTrue(all(os.path.isfile(f) for f in hello["files"]))
        self.assertEqual((event["event"], event["workers"]), ("workers_ready", 2))
        self.assertNotIn("id", event)
        self.assertGreater(event["seconds"], 0)
        self.assertIs(event["forked"], True)  # Triton imports here, one thread: forked workers

    def test_standin_triton_key(self):
        """Workers hand Triton a constant for its own key (a hash of its installed files that only
        names entries of Triton's cache, which workers do not use): the CUBIN is the same byte
        for byte as with the key Triton computes."""
        code = r"""
import json, sys, tempfile
from blocktune import triton_job
from triton.runtime import cache
real = cache.triton_key
req, out = json.loads(sys.argv[1]), {}
for name in ("standin", "real"):
    if name == "standin":
        triton_job.standin_triton_key()
    else:
        cache.triton_key = real
    a = triton_job.answer(dict(req, id=name, cache_dir=tempfile.mkdtemp()))
    out[name] = [a["ok"], a["cached"], open(a["cubin"], "rb").read().hex(), cache.triton_key()]
print(json.dumps(out))
"""
        p = subprocess.run([sys.executable, "-c", code, json.dumps(vector_add("k", None))],
                           capture_output=True, text=True, timeout=600,
                           env=dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python")))
        self.assertEqual(p.returncode, 0, p.stderr)
        out = json.loads(p.stdout)
        (ok1, cached1, cubin1, key1), (ok2, cached2, cubin2, key2) = out["standin"], out["real"]
        self.assertTrue(ok1 and ok2)
        self.assertFalse(cached1 or cached2)  # both compiled
        self.assertEqual(key1, f"{triton.__version__}-blocktune-uncached")
        self.assertTrue(key2.startswith(triton.__version__) and len(key2) > 200, key2[:80])
        self.assertEqual(cubin1, cubin2)

    def test_probe(self):
        p = subprocess.run([sys.executable, "-m", "blocktune.triton_compile", "--probe"],
                           capture_output=True, text=True,
                           env=dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python")))
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(json.loads(p.stdout)["triton_version"], triton.__version__)


class NoTriton(unittest.TestCase):
    def test_missing_triton_is_named(self):
        # -S: no site-packages, so no Triton, whatever this Python has.
        hello, _, answers, rc = run_pool([vector_add("va", "/nonexistent")], args=("-S",))
        self.assertEqual(rc, 3)
        self.assertEqual((hello["ready"], hello["error"]["kind"]), (False, "no_triton"))
        self.assertIn("triton", hello["error"]["message"])
        self.assertEqual(answers, [])


if __name__ == "__main__":
    unittest.main(verbosity=2)
