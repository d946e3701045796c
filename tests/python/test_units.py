"""Unit tests of the tunehub Python client's pure-Python parts: /proc/cpuinfo parsing, Server-Sent Events
parsing, and the bundle cache's digest check."""
import hashlib
import os
import tempfile
import unittest
from unittest import mock

from tunehub import IntegrityError
from tunehub.client import Client
from tunehub.machine import cpu_features, parse_cpuinfo
from tunehub.sse import parse_sse

CPUINFO = """processor\t: 0
vendor_id\t: GenuineIntel
model name\t: Intel(R) Xeon(R) CPU E5-2680 v3 @ 2.50GHz
flags\t\t: fpu vme de pse tsc msr pae mce cx8 SSE sse2 lm pni ssse3 fma sse4_1 sse4_2 avx2 bmi1
bugs\t\t: cpu_meltdown spectre_v1

processor\t: 1
flags\t\t: fpu only_the_first_counts
"""


class CpuinfoTest(unittest.TestCase):
    def test_first_processor_flags_lower_case(self):
        flags = parse_cpuinfo(CPUINFO)
        self.assertEqual(flags[:3], ["fpu", "vme", "de"])
        self.assertIn("sse", flags)  # lower-cased
        self.assertIn("avx2", flags)
        self.assertNotIn("only_the_first_counts", flags)
        self.assertNotIn("cpu_meltdown", flags)  # "bugs" is not "flags"

    def test_no_flags_line(self):
        self.assertEqual(parse_cpuinfo("processor : 0\nFeatures : fp asimd\n"), [])
        self.assertEqual(parse_cpuinfo(""), [])

    def test_unreadable_file(self):
        self.assertEqual(cpu_features("/nonexistent/cpuinfo"), [])


class SseTest(unittest.TestCase):
    def test_events_of_a_job_stream(self):
        stream = [b": keepalive\n", b"id: 1\n", b"event: progress\n", b'data: {"trials": 0}\n', b"\n",
                  b"id: 2\r\n", b"event: stage\r\n", b'data: {"job":3,"stage":"build",\r\n',
                  b'data: "task":4}\r\n', b"\r\n", b"event: done\n", b'data:{"state":"succeeded"}\n', b"\n"]
        got = list(parse_sse(stream))
        self.assertEqual(got[0], ("progress", {"trials": 0}, "1"))
        self.assertEqual(got[1], ("stage", {"job": 3, "stage": "build", "task": 4}, "2"))
        self.assertEqual(got[2], ("done", {"state": "succeeded"}, "2"))  # the id carries over
        self.assertEqual(len(got), 3)

    def test_no_data_no_event_and_text_data(self):
        got = list(parse_sse(["event: lonely\n", "\n", "data: not json\n", "\n"]))
        self.assertEqual(got, [("message", "not json", None)])

    def test_unterminated_event_is_not_dispatched(self):
        self.assertEqual(list(parse_sse(["event: done\n", "data: {}\n"])), [])


class CacheTest(unittest.TestCase):
    def test_tampered_cached_bundle_is_refused(self):
        with tempfile.TemporaryDirectory() as d, mock.patch.dict(os.environ, {"XDG_CACHE_HOME": d}):
            c = Client("http://127.0.0.1:1")
            self.assertEqual(c.bundles_dir(), os.path.join(d, "tunehub", "bundles"))
            os.makedirs(c.bundles_dir())
            body = b"bundle bytes"
            hexd = hashlib.sha256(body).hexdigest()
            p = os.path.join(c.bundles_dir(), hexd + ".tar")
            with open(p, "wb") as f:
                f.write(body)
            self.assertEqual(c._cached("sha256:" + hexd), p)
            with open(p, "r+b") as f:
                f.write(b"X")
            self.assertIsNone(c._cached("sha256:" + hexd))
            self.assertFalse(os.path.exists(p))

    def test_stated_digest_must_be_sha256(self):
        for bad in (None, "", "md5:00", "sha256:" + "g" * 64, "sha256:abc"):
            with self.assertRaises(IntegrityError):
                Client._hex(bad)


if __name__ == "__main__":
    unittest.main()
