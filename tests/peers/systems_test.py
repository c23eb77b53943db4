"""walfs_peers.systems and main: skip reasons, probes' parsers, engine choice,
system selection and the per-cell collector -- everything that does not
touch the machine."""

import unittest

from walfs_peers import aim, host, main, systems

ALL_TOOLS = {t: "/usr/bin/" + t for t in systems.TOOLS}


def facts(root=True, loop=True, fuse=True, missing=(), uring_off=False, fuse_uring=True):
    tools = {k: (None if k in missing else v) for k, v in ALL_TOOLS.items()}
    return host.HostFacts(is_root=root, has_loop_control=loop, has_fuse=fuse,
                          filesystems=frozenset({"xfs", "ext4", "tmpfs", "fuse"}), tools=tools,
                          io_uring_disabled=uring_off, fuse_uring=fuse_uring)


def reasons(f):
    return {s.name: s.skip_reason(f) for s in systems.all_systems()}


class SkipReasonTest(unittest.TestCase):
    def test_everything_runs_with_root_loop_fuse_and_tools(self):
        self.assertEqual({n: r for n, r in reasons(facts()).items() if r}, {})

    def test_tmpfs_always_runs(self):
        for f in (facts(root=False, loop=False, fuse=False, missing=systems.TOOLS),):
            self.assertIsNone(reasons(f)["tmpfs"])

    def test_loop_systems_need_root_and_loop_control(self):
        r = reasons(facts(root=False))
        for n in ("ext4", "xfs", "xfs-minlog"):
            self.assertIn("needs root", r[n])
        r = reasons(facts(loop=False))
        self.assertIn("/dev/loop-control", r["xfs"])

    def test_missing_mkfs_names_the_package(self):
        r = reasons(facts(missing=["mkfs.xfs"]))
        self.assertIn("xfsprogs", r["xfs"])
        self.assertIsNone(r["ext4"])

    def test_fuse_systems_need_dev_fuse(self):
        r = reasons(facts(fuse=False))
        self.assertIn("/dev/fuse", r["fuse2fs"])
        self.assertIn("/dev/fuse", r["passthrough"])
        self.assertIn("fuse2fs", reasons(facts(missing=["fuse2fs"]))["fuse2fs"])
        self.assertIn("not built", reasons(facts(missing=[systems.PASSTHROUGH_BIN]))["passthrough"])

    def test_passthrough_hp_needs_its_build_root_and_for_its_ring_row_the_rings(self):
        self.assertIn("scripts/build-passthrough-hp.sh",
                      reasons(facts(missing=[systems.PASSTHROUGH_HP_BIN]))["passthrough-hp-uring"])
        self.assertIn("needs root", reasons(facts(root=False))["passthrough-hp"])
        self.assertIn("/dev/fuse", reasons(facts(fuse=False))["passthrough-hp"])
        off = reasons(facts(fuse_uring=False))
        self.assertIn("--enable-uring", off["passthrough-hp-uring"])
        self.assertIsNone(off["passthrough-hp"])
        self.assertIn("no FUSE over io_uring", reasons(facts(fuse_uring=None))["passthrough-hp-uring"])

    def test_io_uring_instances_are_counted_from_a_process_descriptors(self):
        import os
        self.assertEqual(systems.count_io_uring_fds(os.getpid()), 0)
        self.assertEqual(systems.count_io_uring_fds(2 ** 22 + 1), 0)   # no such process

    def test_walfs_rows_wait_for_the_mount(self):
        r = reasons(facts(missing=["walfs"]))
        walfs = [n for n in r if n.startswith("walfs-")]
        self.assertEqual(len(walfs), 12)   # 3 wake modes x (small, default) log x 2 transports
        for n in walfs:
            self.assertIn("build/bin/walfs does not exist yet", r[n])

    def test_walfs_over_the_rings_needs_the_kernel_to_offer_them(self):
        ring_rows = [s.name for s in systems.all_systems() if s.name.startswith("walfs-") and s.name.endswith("-uring")]
        self.assertEqual(sorted(ring_rows), sorted(
            f"walfs-{m}{log}-uring" for m in systems.WAKE_MODES for log in ("", "-minlog")))
        off = reasons(facts(fuse_uring=False))
        missing = reasons(facts(fuse_uring=None))
        for n in ring_rows:
            self.assertIn("--enable-uring", off[n])
            self.assertIn("no FUSE over io_uring", missing[n])
        # The /dev/fuse rows do not care.
        self.assertIsNone(off["walfs-wakeq"])
        self.assertIsNone(missing["walfs-inline-minlog"])

    def test_reasons_are_one_line(self):
        f = facts(root=False, loop=False, fuse=False, missing=systems.TOOLS)
        for n, r in reasons(f).items():
            if r:
                self.assertNotIn("\n", r, n)


class ParserTest(unittest.TestCase):
    def test_xfs_minimum_log(self):
        self.assertEqual(systems.parse_xfs_min_log(
            "log size 512 blocks too small, minimum size is 1566 blocks\nUsage: ..."), 1566)
        self.assertIsNone(systems.parse_xfs_min_log("Log size must be at least 64MB."))

    def test_walfs_mount_options_carry_the_worker_threads_when_set(self):
        self.assertEqual(systems.walfs_mount_options("wakeq"), "wake=wakeq,transport=dev")
        self.assertEqual(systems.walfs_mount_options("waking", None, "uring"),
                         "wake=waking,transport=uring")
        self.assertEqual(systems.walfs_mount_options("inline", 64),
                         "wake=inline,transport=dev,max_threads=64,threads=64")

    def test_walfs_ring_lanes_go_only_to_a_mount_over_the_rings(self):
        self.assertEqual(systems.walfs_mount_options("wakeq", None, "uring", 32),
                         "wake=wakeq,transport=uring,uring_lanes=32")
        self.assertEqual(systems.walfs_mount_options("wakeq", None, "dev", 32), "wake=wakeq,transport=dev")

    def test_walfs_minimum_log_is_rounded_up_to_blocks(self):
        msg = "the log must hold 3 of them: at least 701432 bytes"
        self.assertEqual(systems.parse_walfs_min_log(msg), 172 * 4096)
        self.assertIsNone(systems.parse_walfs_min_log("made it"))

    def test_sizes(self):
        self.assertEqual(systems.parse_size("2g"), 2 << 30)
        self.assertEqual(systems.parse_size("512m"), 512 << 20)
        with self.assertRaises(ValueError):
            systems.parse_size("2 gigs")

    def test_users_ramp(self):
        self.assertEqual(aim.parse_users("1:16:5"), (1, 16, 5))
        self.assertEqual(aim.parse_users("8"), (8, 8, 1))
        with self.assertRaises(ValueError):
            aim.parse_users("4:1:1")

    def test_run_directories_carry_the_pid(self):
        self.assertEqual(host.run_pid("/dev/shm/walfs-peers.1234/mnt/xfs"), 1234)
        self.assertEqual(host.run_pid("/dev/shm/walfs-peers.77"), 77)
        self.assertIsNone(host.run_pid("/dev/shm/walfs-peers-fio-smoke.x"))

    def test_walfs_stats_lines(self, ):
        import os
        import tempfile
        with tempfile.NamedTemporaryFile("w", delete=False) as f:
            f.write("reserve_sleeps 12\nwrite_wakes: 3\nname text\n")
        try:
            self.assertEqual(systems.read_walfs_stats(f.name), {"reserve_sleeps": 12.0, "write_wakes": 3.0})
        finally:
            os.unlink(f.name)
        self.assertIsNone(systems.read_walfs_stats("/nonexistent/stats"))


class EngineChoiceTest(unittest.TestCase):
    def test_o_direct_systems_run_every_requested_engine_direct(self):
        engines, note = main.choose_engines(["psync", "libaio", "io_uring"], True, False)
        self.assertEqual(engines, [("psync", 1), ("libaio", 1), ("io_uring", 1)])
        self.assertEqual(note, "")

    def test_o_direct_refused_falls_back_to_buffered_psync(self):
        engines, note = main.choose_engines(["psync", "libaio", "io_uring"], False, False)
        self.assertEqual(engines, [("psync", 0)])
        self.assertIn("O_DIRECT refused", note)

    def test_disabled_io_uring_is_dropped(self):
        engines, note = main.choose_engines(["psync", "io_uring"], True, True)
        self.assertEqual(engines, [("psync", 1)])
        self.assertIn("io_uring", note)


class SelectionAndCollectorTest(unittest.TestCase):
    def test_select_by_name_and_walfs_group(self):
        names = [s.name for s in main.select_systems(systems.all_systems(), "tmpfs,walfs")]
        self.assertEqual(names[0], "tmpfs")
        self.assertEqual(len(names), 13)
        rings = [s.name for s in main.select_systems(systems.all_systems(), "walfs-uring")]
        dev = [s.name for s in main.select_systems(systems.all_systems(), "walfs-dev")]
        self.assertEqual(len(rings), 6)
        self.assertTrue(all(n.endswith("-uring") for n in rings), rings)
        self.assertEqual(len(dev), 6)
        self.assertFalse(any(n.endswith("-uring") for n in dev), dev)
        with self.assertRaises(ValueError):
            main.select_systems(systems.all_systems(), "zfs")

    def test_collector_aggregates_reps_and_keeps_failures(self):
        c = main.Collector()
        key = ("xfs", "fio:randread-4k", "psync", 1, None, "IOPS")
        for v, p in ((100.0, 10.0), (300.0, 30.0), (200.0, 20.0)):
            c.add(key, v, p99=p)
        bad = ("ext4", "aim-fserver", "-", "-", 4, "jobs/min")
        c.add(bad, 50.0)
        c.fail(bad, "failed: walfs-aim: user 2 failed")
        rows = c.rows()
        self.assertEqual((rows[0]["median"], rows[0]["min"], rows[0]["max"], rows[0]["p99_us"],
                          rows[0]["reps"]), (200.0, 100.0, 300.0, 20.0, 3))
        self.assertEqual((rows[1]["median"], rows[1]["reps"]), (50.0, 1))
        self.assertIn("failed", rows[1]["note"])
        self.assertTrue(c.failed())

    def test_quick_defaults(self):
        a = main.parse_args(["--quick"])
        self.assertEqual((a.reps, a.engines), (1, ["psync"]))
        self.assertEqual(a.fio_params.runtime, "1s")
        a = main.parse_args([])
        self.assertEqual((a.reps, a.engines), (3, ["psync", "libaio", "io_uring"]))


if __name__ == "__main__":
    unittest.main()
