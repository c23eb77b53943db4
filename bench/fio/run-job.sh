#!/usr/bin/env bash
# Runs one walfs fio job file in DIR with the documented defaults for every
# variable the job files use; any of them can be overridden from the
# environment.  Extra arguments go to fio (e.g. --output-format=json).
#
#   bench/fio/run-job.sh bench/fio/randwrite-4k-fsync-1j.fio /mnt/test
#   SIZE=16m RUNTIME=2s IOENGINE=io_uring bench/fio/run-job.sh JOB.fio DIR
set -euo pipefail
if (($# < 2)); then
  echo "usage: $0 JOB.fio DIR [fio options...]" >&2
  exit 2
fi
job=$1 dir=$2
shift 2
export DIR=$dir
export SIZE=${SIZE:-256m} RUNTIME=${RUNTIME:-30s} IOENGINE=${IOENGINE:-psync}
export DIRECT=${DIRECT:-1} IODEPTH=${IODEPTH:-16} NRFILES=${NRFILES:-10000}
exec fio "$@" "$job"
