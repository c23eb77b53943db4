// The one source file of walfs_test_pch (tests/CMakeLists.txt), the target
// that owns the precompiled header every spec binary reuses.  CMake makes a
// target's precompiled header only for a target with a source of its own.
