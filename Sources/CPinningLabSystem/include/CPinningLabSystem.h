// System calls the Glibc module does not declare: glibc exposes accept4 and pipe2 only under _GNU_SOURCE, which the
// Swift Glibc module does not define (and which cannot be defined in a header shared with it: it changes struct
// layouts such as fd_set). So the wrappers are real C functions compiled with _GNU_SOURCE in shim.c, declared here
// with plain types: `address` is a `struct sockaddr *`, `length` a `socklen_t *` (32-bit unsigned on Linux).
#ifndef CPINNINGLAB_SYSTEM_H
#define CPINNINGLAB_SYSTEM_H

/// accept4(2): returns the new descriptor, or -1 with errno set. On systems without accept4 (Darwin) it is
/// accept(2) followed by fcntl for the flags, which is not atomic with respect to fork.
int cpinninglab_accept4(int fd, void *address, unsigned int *length, int nonblock_cloexec);

/// pipe2(2) with O_CLOEXEC, and O_NONBLOCK on both ends when `nonblock` is not 0: 0, or -1 with errno set. On
/// systems without pipe2 (Darwin) it is pipe(2) followed by fcntl, which is not atomic with respect to fork.
int cpinninglab_pipe2_cloexec(int fds[2], int nonblock);

/// The calling thread's name as the operating system knows it (pthread_getname_np), into `buffer`; 0 on success.
int cpinninglab_thread_name(char *buffer, unsigned long length);

/// Names the calling thread (pthread_setname_np; at most 15 bytes are kept on Linux). A new thread otherwise keeps
/// the name of the thread that created it.
int cpinninglab_set_thread_name(const char *name);

// HTTP/2 through nghttp2, loaded at run time (http2.c).
#include "CPinningLabHTTP2.h"

#ifdef __linux__
// epoll(7), which the Glibc module does not include: the fixture server's workers wait on it (Epoll.swift).
#include <sys/epoll.h>
#endif

#endif
