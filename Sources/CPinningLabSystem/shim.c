#define _GNU_SOURCE 1
#include "CPinningLabSystem.h"
#include <fcntl.h>
#include <sys/socket.h>
#include <pthread.h>
#include <unistd.h>

static int set_flags(int fd, int nonblock) {
    int fl = fcntl(fd, F_GETFL);
    if (fl < 0 || (nonblock && fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0)) return -1;
    return fcntl(fd, F_SETFD, FD_CLOEXEC);
}

int cpinninglab_accept4(int fd, void *address, unsigned int *length, int nonblock_cloexec) {
#ifdef __linux__
    return accept4(fd, (struct sockaddr *)address, (socklen_t *)length, nonblock_cloexec ? (SOCK_NONBLOCK | SOCK_CLOEXEC) : 0);
#else
    int c = accept(fd, (struct sockaddr *)address, (socklen_t *)length);
    if (c >= 0 && nonblock_cloexec && set_flags(c, 1) < 0) { close(c); return -1; }
    return c;
#endif
}

int cpinninglab_pipe2_cloexec(int fds[2], int nonblock) {
#ifdef __linux__
    return pipe2(fds, O_CLOEXEC | (nonblock ? O_NONBLOCK : 0));
#else
    if (pipe(fds) < 0) return -1;
    if (set_flags(fds[0], nonblock) < 0 || set_flags(fds[1], nonblock) < 0) { close(fds[0]); close(fds[1]); return -1; }
    return 0;
#endif
}

int cpinninglab_thread_name(char *buffer, unsigned long length) {
    return pthread_getname_np(pthread_self(), buffer, length);
}

int cpinninglab_set_thread_name(const char *name) {
#ifdef __APPLE__
    return pthread_setname_np(name);
#else
    return pthread_setname_np(pthread_self(), name);
#endif
}
