"""walfs-peers: the same loads on walfs and on peer filesystems, side by side.

Modules, lowest first: stats (median and spread), report (the tables as
markdown, CSV and JSON), fio (the job catalogue and fio's JSON), aim
(walfs-aim), host (commands, mounts, loop devices, leftovers), tree (the
small-file tree load: tarball, extract, stat, rm), systems (set up and tear
down each filesystem), plots (gnuplot), main (the command line and the run).  Standard library only.
"""
