// Clang thread-safety annotations (no-ops elsewhere).
//
// Lock annotations are part of walfs's API: a field written under a lock is
// GUARDED_BY it, a helper that expects the lock held REQUIRES it (and is named
// FooLocked()), and the asan CI job builds with clang, -Wthread-safety -Werror.
#pragma once

#if defined(__clang__)
#define WALFS_THREAD_ANNOTATION(x) __attribute__((x))
#else
#define WALFS_THREAD_ANNOTATION(x)
#endif

#define CAPABILITY(x) WALFS_THREAD_ANNOTATION(capability(x))
#define SCOPED_CAPABILITY WALFS_THREAD_ANNOTATION(scoped_lockable)
#define GUARDED_BY(x) WALFS_THREAD_ANNOTATION(guarded_by(x))
#define PT_GUARDED_BY(x) WALFS_THREAD_ANNOTATION(pt_guarded_by(x))
#define ACQUIRED_BEFORE(...) WALFS_THREAD_ANNOTATION(acquired_before(__VA_ARGS__))
#define ACQUIRED_AFTER(...) WALFS_THREAD_ANNOTATION(acquired_after(__VA_ARGS__))
#define REQUIRES(...) WALFS_THREAD_ANNOTATION(requires_capability(__VA_ARGS__))
#define EXCLUDES(...) WALFS_THREAD_ANNOTATION(locks_excluded(__VA_ARGS__))
#define ACQUIRE(...) WALFS_THREAD_ANNOTATION(acquire_capability(__VA_ARGS__))
#define RELEASE(...) WALFS_THREAD_ANNOTATION(release_capability(__VA_ARGS__))
#define TRY_ACQUIRE(...) WALFS_THREAD_ANNOTATION(try_acquire_capability(__VA_ARGS__))
#define ASSERT_CAPABILITY(x) WALFS_THREAD_ANNOTATION(assert_capability(x))
#define RETURN_CAPABILITY(x) WALFS_THREAD_ANNOTATION(lock_returned(x))
#define NO_THREAD_SAFETY_ANALYSIS WALFS_THREAD_ANNOTATION(no_thread_safety_analysis)
