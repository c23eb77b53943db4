"""walfs_peers.fio: the job catalogue matches bench/fio, and fio's JSON parses."""

import json
import os
import re
import unittest

from walfs_peers import fio

FIO_DIR = os.path.join(os.path.dirname(__file__), "..", "..", "bench", "fio")


def fio_doc(jobs):
    return json.dumps({"fio version": "fio-3.33", "jobs": jobs})


def job(name="j", error=0, read=None, write=None, sync=None):
    empty = {"iops": 0.0, "bw_bytes": 0, "total_ios": 0, "clat_ns": {}}
    return {"jobname": name, "error": error, "read": read or empty, "write": write or empty,
            "sync": sync or {"total_ios": 0, "lat_ns": {}}}


def direction(iops, p99_ns, ios=100, bw=4096):
    return {"iops": iops, "bw_bytes": bw, "total_ios": ios,
            "clat_ns": {"percentile": {"50.000000": 1, "99.000000": p99_ns}}}


class CatalogueTest(unittest.TestCase):
    def test_every_job_has_a_file_and_every_file_a_job(self):
        files = {f[:-4] for f in os.listdir(FIO_DIR) if f.endswith(".fio")}
        self.assertEqual(files, set(fio.JOBS_BY_NAME))

    def test_job_files_read_only_the_documented_variables(self):
        for j in fio.JOBS:
            with open(fio.job_path(FIO_DIR, j)) as f:
                text = f.read()
            used = set(re.findall(r"\$\{(\w+)\}", text.split("[global]", 1)[1]))
            self.assertLessEqual(used, set(fio.job_env("/d", fio.FULL_PARAMS)), j.name)
            self.assertIn("DIR", used, j.name)
            self.assertEqual("IOENGINE" in used, j.engine_var, j.name)
            self.assertEqual("DIRECT" in used, j.direct_var, j.name)
            self.assertEqual("verify=crc32c" in text, j.verify, j.name)

    def test_env_sets_every_variable(self):
        env = fio.job_env("/mnt/x", fio.QUICK_PARAMS, "io_uring", 0)
        self.assertEqual(env["DIR"], "/mnt/x")
        self.assertEqual(env["IOENGINE"], "io_uring")
        self.assertEqual(env["DIRECT"], "0")
        self.assertTrue(all(v != "" for v in env.values()))


class ParseTest(unittest.TestCase):
    def test_write_job_with_fsync_latency(self):
        sync = {"total_ios": 50, "lat_ns": {"percentile": {"99.000000": 40000}}}
        r = fio.parse_json(fio_doc([job(write=direction(1000.0, 25000, bw=4 << 20), sync=sync)]), "write")
        self.assertEqual(r["iops"], 1000.0)
        self.assertEqual(r["bw_mib_s"], 4.0)
        self.assertEqual(r["p99_us"], 25.0)
        self.assertEqual(r["fsync_p99_us"], 40.0)

    def test_file_engines_report_in_the_read_direction(self):
        r = fio.parse_json(fio_doc([job(read=direction(5000.0, 9000))]), "read")
        self.assertEqual((r["iops"], r["p99_us"], r["fsync_p99_us"]), (5000.0, 9.0, None))

    def test_several_jobs_sum_iops_and_keep_the_worst_p99(self):
        doc = fio_doc([job(write=direction(100.0, 1000)), job(write=direction(300.0, 5000))])
        r = fio.parse_json(doc, "write")
        self.assertEqual((r["iops"], r["p99_us"]), (400.0, 5.0))

    def test_notes_before_the_json_are_skipped(self):
        text = "note: both iodepth >= 1 and synchronous I/O engine are selected\n" + \
            fio_doc([job(write=direction(1.0, 1000))])
        self.assertEqual(fio.parse_json(text, "write")["iops"], 1.0)

    def test_a_verify_failure_is_an_error(self):
        with self.assertRaisesRegex(fio.FioError, "verification failed"):
            fio.parse_json(fio_doc([job(error=84)]), "write")

    def test_other_job_errors_name_the_errno(self):
        with self.assertRaisesRegex(fio.FioError, "error 22"):
            fio.parse_json(fio_doc([job(error=22)]), "write")

    def test_garbage_and_empty_output(self):
        for text in ("", "fio: no such file", '{"jobs": []}', "{oops"):
            with self.assertRaises(fio.FioError):
                fio.parse_json(text, "write")

    def test_verify_job_must_read_back(self):
        j = fio.JOBS_BY_NAME["randwrite-4k-verify"]
        with self.assertRaises(fio.FioError):
            fio.check_verify(j, {"verify_read_ios": 0})
        fio.check_verify(j, {"verify_read_ios": 10})
        fio.check_verify(fio.JOBS_BY_NAME["seqwrite-1m"], {"verify_read_ios": 0})


if __name__ == "__main__":
    unittest.main()
