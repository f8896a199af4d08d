/*
 * faultfs: a fault-injecting FUSE passthrough file system for tests.
 *
 * Mirrors one backing directory at a mount point. Everything passes through
 * to the backing directory, except that while a control file exists in the
 * backing directory's root, the matching operations fail:
 *
 *   .faultfs-fail-fsync      fsync/fdatasync on files and directories
 *   .faultfs-fail-write      write
 *   .faultfs-fail-fallocate  fallocate
 *   .faultfs-fail-flush      flush (i.e. close(2) reports the error)
 *
 * The error is EIO unless the control file's first line names another one:
 * a decimal errno, or one of EIO ENOSPC EDQUOT EROFS EFBIG.  The control
 * files, and the .faultfs-trash directory (see rel_buf), are hidden from the
 * mount's root directory listing; nothing else is hidden.
 *
 * O_DIRECT: the kernel FUSE module accepts O_DIRECT opens and sends O_DIRECT
 * reads/writes straight to this daemon (no page cache on the FUSE side).
 * O_DIRECT is stripped when the backing file is opened, because libfuse's
 * request buffers are not block aligned; durability is then given by the
 * backing fsync/fdatasync, which this file system passes through.
 *
 * No mount option is needed for O_DIRECT.  See faultfs.md beside this file.
 *
 * Build: gcc -O2 -Wall -o faultfs faultfs.c $(pkg-config --cflags --libs fuse3)
 * Run:   faultfs <backing_dir> <mount_point> [-d] [-s] [-o opt,...]
 *        Always runs in the foreground.  `umount <mount_point>` (or
 *        `fusermount3 -u`) or SIGTERM/SIGINT unmount and exit; after SIGKILL
 *        the mount point reports ENOTCONN until `umount <mount_point>`.
 */
#define FUSE_USE_VERSION 31
#define _GNU_SOURCE

#include <fuse.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/time.h>
#include <sys/xattr.h>
#include <unistd.h>

static int backing_fd = -1; /* O_DIRECTORY fd of the backing root */

/* Number of files moved into TRASH that may still need removing. */
static int trash_pending;
static pthread_mutex_t trash_lock = PTHREAD_MUTEX_INITIALIZER;

#define CTL_FSYNC ".faultfs-fail-fsync"
#define CTL_WRITE ".faultfs-fail-write"
#define CTL_FALLOCATE ".faultfs-fail-fallocate"
#define CTL_FLUSH ".faultfs-fail-flush"

/* Returns 0 when the fault is off, else a negative errno to return. */
static int fault(const char *ctl)
{
    int fd = openat(backing_fd, ctl, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0)
        return 0;
    char buf[32];
    ssize_t n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    if (n <= 0)
        return -EIO;
    buf[n] = 0;
    buf[strcspn(buf, " \t\r\n")] = 0;
    if (buf[0] >= '0' && buf[0] <= '9') {
        int e = atoi(buf);
        return e > 0 ? -e : -EIO;
    }
    static const struct { const char *n; int e; } names[] = {
        {"EIO", EIO}, {"ENOSPC", ENOSPC}, {"EDQUOT", EDQUOT},
        {"EROFS", EROFS}, {"EFBIG", EFBIG},
    };
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        if (strcmp(buf, names[i].n) == 0)
            return -names[i].e;
    return -EIO;
}

#define TRASH ".faultfs-trash"
#define HIDDEN_PREFIX ".fuse_hidden"

/*
 * Path relative to the backing root: "/" -> ".", "/a/b" -> "a/b".
 * libfuse "hides" a file that is unlinked (or renamed over) while open by
 * renaming it to <dir>/.fuse_hiddenXXXX and unlinks it on the last close.
 * Those names are redirected into TRASH in the backing root, so they never
 * show up in the tree (rmdir of their old directory works) while the node
 * keeps a usable path (stat(2) of an unlinked open file keeps working, until
 * its old directory is removed: then libfuse has no path and a stat(2) that
 * misses the kernel's attribute cache gets ESTALE; fd-based read, write,
 * fsync, ftruncate keep working).  trash_collect() removes what libfuse
 * cannot.
 */
static const char *rel_buf(const char *path, char *buf)
{
    while (*path == '/')
        path++;
    if (!*path)
        return ".";
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    if (strncmp(base, HIDDEN_PREFIX, strlen(HIDDEN_PREFIX)) == 0) {
        snprintf(buf, PATH_MAX, TRASH "/%s", base);
        return buf;
    }
    return path;
}

#define rel(path) rel_buf((path), (char[PATH_MAX]){0})

static int is_ctl_name(const char *name)
{
    return strcmp(name, CTL_FSYNC) == 0 || strcmp(name, CTL_WRITE) == 0 ||
           strcmp(name, CTL_FALLOCATE) == 0 || strcmp(name, CTL_FLUSH) == 0 ||
           strcmp(name, TRASH) == 0;
}

#define CHK(expr) ((expr) == -1 ? -errno : 0)

static void *ff_init(struct fuse_conn_info *conn, struct fuse_config *cfg)
{
    (void)conn;
    cfg->use_ino = 1;
    /* fh-based ops may get path == NULL (see rel_buf for hidden files). */
    cfg->nullpath_ok = 1;
    return NULL;
}

static int ff_getattr(const char *path, struct stat *st, struct fuse_file_info *fi)
{
    if (fi)
        return CHK(fstat(fi->fh, st));
    if (!path)
        return -ENOENT;
    return CHK(fstatat(backing_fd, rel(path), st, AT_SYMLINK_NOFOLLOW));
}

static int ff_access(const char *path, int mask)
{
    return CHK(faccessat(backing_fd, rel(path), mask, 0));
}

static int ff_readlink(const char *path, char *buf, size_t size)
{
    ssize_t n = readlinkat(backing_fd, rel(path), buf, size - 1);
    if (n == -1)
        return -errno;
    buf[n] = 0;
    return 0;
}

struct ff_dir {
    DIR *dp;
    struct dirent *entry;
    off_t offset;
    int is_root;
};

static int ff_opendir(const char *path, struct fuse_file_info *fi)
{
    struct ff_dir *d = calloc(1, sizeof(*d));
    if (!d)
        return -ENOMEM;
    int fd = openat(backing_fd, rel(path), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd == -1 || !(d->dp = fdopendir(fd))) {
        int e = errno;
        if (fd != -1)
            close(fd);
        free(d);
        return -e;
    }
    d->is_root = strcmp(rel(path), ".") == 0;
    fi->fh = (uintptr_t)d;
    return 0;
}

static int ff_readdir(const char *path, void *buf, fuse_fill_dir_t filler,
                      off_t offset, struct fuse_file_info *fi,
                      enum fuse_readdir_flags flags)
{
    (void)path;
    (void)flags;
    struct ff_dir *d = (struct ff_dir *)(uintptr_t)fi->fh;
    if (offset != d->offset) {
        seekdir(d->dp, offset);
        d->entry = NULL;
        d->offset = offset;
    }
    for (;;) {
        if (!d->entry) {
            errno = 0;
            d->entry = readdir(d->dp);
            if (!d->entry) {
                if (errno)
                    return -errno;
                break;
            }
        }
        off_t next = telldir(d->dp);
        if (!(d->is_root && is_ctl_name(d->entry->d_name))) {
            struct stat st;
            memset(&st, 0, sizeof(st));
            st.st_ino = d->entry->d_ino;
            st.st_mode = d->entry->d_type << 12;
            if (filler(buf, d->entry->d_name, &st, next, 0))
                break; /* buffer full; resume from this entry next time */
        }
        d->entry = NULL;
        d->offset = next;
    }
    return 0;
}

static int ff_releasedir(const char *path, struct fuse_file_info *fi)
{
    (void)path;
    struct ff_dir *d = (struct ff_dir *)(uintptr_t)fi->fh;
    closedir(d->dp);
    free(d);
    return 0;
}

/* fsync or fdatasync `fd`, unless the fsync fault is on. */
static int sync_fd(int fd, int datasync)
{
    int err = fault(CTL_FSYNC);
    if (err)
        return err;
    return CHK(datasync ? fdatasync(fd) : fsync(fd));
}

static int ff_fsyncdir(const char *path, int datasync, struct fuse_file_info *fi)
{
    (void)path;
    return sync_fd(dirfd(((struct ff_dir *)(uintptr_t)fi->fh)->dp), datasync);
}

static int ff_mknod(const char *path, mode_t mode, dev_t rdev)
{
    if (S_ISFIFO(mode))
        return CHK(mkfifoat(backing_fd, rel(path), mode));
    return CHK(mknodat(backing_fd, rel(path), mode, rdev));
}

static int ff_mkdir(const char *path, mode_t mode)
{
    return CHK(mkdirat(backing_fd, rel(path), mode));
}

static int is_hidden(const char *path)
{
    const char *base = strrchr(path, '/');
    return strncmp(base ? base + 1 : path, HIDDEN_PREFIX, strlen(HIDDEN_PREFIX)) == 0;
}

static int ff_unlink(const char *path)
{
    if (!is_hidden(path))
        return CHK(unlinkat(backing_fd, rel(path), 0));
    pthread_mutex_lock(&trash_lock);
    int res = CHK(unlinkat(backing_fd, rel(path), 0));
    if (res == 0)
        __atomic_sub_fetch(&trash_pending, 1, __ATOMIC_RELAXED);
    pthread_mutex_unlock(&trash_lock);
    return res;
}

static int ff_rmdir(const char *path)
{
    return CHK(unlinkat(backing_fd, rel(path), AT_REMOVEDIR));
}

static int ff_symlink(const char *from, const char *to)
{
    return CHK(symlinkat(from, backing_fd, rel(to)));
}

static int ff_rename(const char *from, const char *to, unsigned int flags)
{
    if (!is_hidden(to))
        return CHK(renameat2(backing_fd, rel(from), backing_fd, rel(to), flags));
    pthread_mutex_lock(&trash_lock);
    int res = CHK(renameat2(backing_fd, rel(from), backing_fd, rel(to), flags));
    if (res == 0)
        __atomic_add_fetch(&trash_pending, 1, __ATOMIC_RELAXED);
    pthread_mutex_unlock(&trash_lock);
    return res;
}

static int ff_link(const char *from, const char *to)
{
    return CHK(linkat(backing_fd, rel(from), backing_fd, rel(to), 0));
}

static int ff_chmod(const char *path, mode_t mode, struct fuse_file_info *fi)
{
    if (fi)
        return CHK(fchmod(fi->fh, mode));
    return CHK(fchmodat(backing_fd, rel(path), mode, 0));
}

static int ff_chown(const char *path, uid_t uid, gid_t gid, struct fuse_file_info *fi)
{
    if (fi)
        return CHK(fchown(fi->fh, uid, gid));
    return CHK(fchownat(backing_fd, rel(path), uid, gid, AT_SYMLINK_NOFOLLOW));
}

static int ff_truncate(const char *path, off_t size, struct fuse_file_info *fi)
{
    if (fi)
        return CHK(ftruncate(fi->fh, size));
    int fd = openat(backing_fd, rel(path), O_WRONLY | O_CLOEXEC);
    if (fd == -1)
        return -errno;
    int res = CHK(ftruncate(fd, size));
    close(fd);
    return res;
}

static int ff_utimens(const char *path, const struct timespec ts[2],
                      struct fuse_file_info *fi)
{
    if (fi)
        return CHK(futimens(fi->fh, ts));
    return CHK(utimensat(backing_fd, rel(path), ts, AT_SYMLINK_NOFOLLOW));
}

/* Backing open flags: O_DIRECT is dropped (see header comment). */
static int backing_flags(int flags)
{
    return (flags & ~O_DIRECT) | O_CLOEXEC;
}

static int ff_create(const char *path, mode_t mode, struct fuse_file_info *fi)
{
    int fd = openat(backing_fd, rel(path), backing_flags(fi->flags), mode);
    if (fd == -1)
        return -errno;
    fi->fh = fd;
    return 0;
}

static int ff_open(const char *path, struct fuse_file_info *fi)
{
    int fd = openat(backing_fd, rel(path), backing_flags(fi->flags));
    if (fd == -1)
        return -errno;
    fi->fh = fd;
    return 0;
}

static int ff_read(const char *path, char *buf, size_t size, off_t off,
                   struct fuse_file_info *fi)
{
    (void)path;
    size_t done = 0;
    while (done < size) {
        ssize_t n = pread(fi->fh, buf + done, size - done, off + done);
        if (n == -1) {
            if (errno == EINTR)
                continue;
            return done ? (int)done : -errno;
        }
        if (n == 0)
            break;
        done += n;
    }
    return (int)done;
}

static int ff_write(const char *path, const char *buf, size_t size, off_t off,
                    struct fuse_file_info *fi)
{
    (void)path;
    int err = fault(CTL_WRITE);
    if (err)
        return err;
    size_t done = 0;
    while (done < size) {
        ssize_t n = pwrite(fi->fh, buf + done, size - done, off + done);
        if (n == -1) {
            if (errno == EINTR)
                continue;
            return done ? (int)done : -errno;
        }
        done += n;
    }
    return (int)done;
}

static int ff_statfs(const char *path, struct statvfs *st)
{
    (void)path;
    return CHK(fstatvfs(backing_fd, st));
}

static int ff_flush(const char *path, struct fuse_file_info *fi)
{
    (void)path;
    int err = fault(CTL_FLUSH);
    if (err)
        return err;
    /* Like close(2) on the backing fd, without closing it. */
    int fd = dup(fi->fh);
    if (fd == -1)
        return -errno;
    return CHK(close(fd));
}

/*
 * libfuse removes a hidden file on its last close only while it can still
 * build the file's path, which fails once its old directory was removed.
 * So, after closing a file that sits in TRASH, remove it here unless this
 * process still has another fd open on it.
 */
static void trash_collect(dev_t dev, ino_t ino)
{
    pthread_mutex_lock(&trash_lock);
    if (__atomic_load_n(&trash_pending, __ATOMIC_RELAXED) <= 0)
        goto out;
    int tfd = openat(backing_fd, TRASH, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DIR *td = tfd == -1 ? NULL : fdopendir(tfd);
    if (!td) {
        if (tfd != -1)
            close(tfd);
        goto out;
    }
    struct dirent *e;
    while ((e = readdir(td))) {
        if (e->d_ino != ino || e->d_name[0] != '.' || e->d_name[1] != 'f')
            continue;
        struct stat st;
        if (fstatat(tfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) || st.st_dev != dev ||
            st.st_ino != ino)
            continue;
        int busy = 0;
        DIR *fds = opendir("/proc/self/fd");
        struct dirent *f;
        while (fds && !busy && (f = readdir(fds))) {
            struct stat fst;
            int n = atoi(f->d_name);
            if (f->d_name[0] != '.' && n != dirfd(fds) && fstat(n, &fst) == 0 &&
                fst.st_dev == dev && fst.st_ino == ino)
                busy = 1;
        }
        if (fds)
            closedir(fds);
        if (!busy && unlinkat(tfd, e->d_name, 0) == 0)
            __atomic_sub_fetch(&trash_pending, 1, __ATOMIC_RELAXED);
        break;
    }
    closedir(td);
out:
    pthread_mutex_unlock(&trash_lock);
}

static int ff_release(const char *path, struct fuse_file_info *fi)
{
    (void)path;
    struct stat st;
    int in_trash = __atomic_load_n(&trash_pending, __ATOMIC_RELAXED) > 0 &&
                   fstat(fi->fh, &st) == 0;
    close(fi->fh);
    if (in_trash)
        trash_collect(st.st_dev, st.st_ino);
    return 0;
}

static int ff_fsync(const char *path, int datasync, struct fuse_file_info *fi)
{
    (void)path;
    return sync_fd(fi->fh, datasync);
}

static int ff_fallocate(const char *path, int mode, off_t off, off_t len,
                        struct fuse_file_info *fi)
{
    (void)path;
    int err = fault(CTL_FALLOCATE);
    if (err)
        return err;
    if (fallocate(fi->fh, mode, off, len) == 0)
        return 0;
    if (errno == EOPNOTSUPP && mode == 0) {
        err = posix_fallocate(fi->fh, off, len);
        return -err;
    }
    return -errno;
}

static int ff_flock(const char *path, struct fuse_file_info *fi, int op)
{
    (void)path;
    return CHK(flock(fi->fh, op));
}

static off_t ff_lseek(const char *path, off_t off, int whence,
                      struct fuse_file_info *fi)
{
    int fd = fi ? (int)fi->fh : openat(backing_fd, rel(path), O_RDONLY | O_CLOEXEC);
    if (fd == -1)
        return -errno;
    off_t res = lseek(fd, off, whence);
    if (res == -1)
        res = -errno;
    if (!fi)
        close(fd);
    return res;
}

static ssize_t ff_copy_file_range(const char *path_in, struct fuse_file_info *fi_in,
                                  off_t off_in, const char *path_out,
                                  struct fuse_file_info *fi_out, off_t off_out,
                                  size_t len, int flags)
{
    (void)path_in;
    (void)path_out;
    int err = fault(CTL_WRITE);
    if (err)
        return err;
    ssize_t n = copy_file_range(fi_in->fh, &off_in, fi_out->fh, &off_out, len, flags);
    return n == -1 ? -errno : n;
}

/* xattrs go through a path; O_PATH-free variants via /proc are not needed. */
static int ff_setxattr(const char *path, const char *name, const char *value,
                       size_t size, int flags)
{
    char p[PATH_MAX];
    snprintf(p, sizeof(p), "/proc/self/fd/%d/%s", backing_fd, rel(path));
    return CHK(lsetxattr(p, name, value, size, flags));
}

static int ff_getxattr(const char *path, const char *name, char *value, size_t size)
{
    char p[PATH_MAX];
    snprintf(p, sizeof(p), "/proc/self/fd/%d/%s", backing_fd, rel(path));
    ssize_t n = lgetxattr(p, name, value, size);
    return n == -1 ? -errno : (int)n;
}

static int ff_listxattr(const char *path, char *list, size_t size)
{
    char p[PATH_MAX];
    snprintf(p, sizeof(p), "/proc/self/fd/%d/%s", backing_fd, rel(path));
    ssize_t n = llistxattr(p, list, size);
    return n == -1 ? -errno : (int)n;
}

static int ff_removexattr(const char *path, const char *name)
{
    char p[PATH_MAX];
    snprintf(p, sizeof(p), "/proc/self/fd/%d/%s", backing_fd, rel(path));
    return CHK(lremovexattr(p, name));
}

static const struct fuse_operations ff_ops = {
    .init = ff_init,
    .getattr = ff_getattr,
    .access = ff_access,
    .readlink = ff_readlink,
    .opendir = ff_opendir,
    .readdir = ff_readdir,
    .releasedir = ff_releasedir,
    .fsyncdir = ff_fsyncdir,
    .mknod = ff_mknod,
    .mkdir = ff_mkdir,
    .symlink = ff_symlink,
    .unlink = ff_unlink,
    .rmdir = ff_rmdir,
    .rename = ff_rename,
    .link = ff_link,
    .chmod = ff_chmod,
    .chown = ff_chown,
    .truncate = ff_truncate,
    .utimens = ff_utimens,
    .create = ff_create,
    .open = ff_open,
    .read = ff_read,
    .write = ff_write,
    .statfs = ff_statfs,
    .flush = ff_flush,
    .release = ff_release,
    .fsync = ff_fsync,
    .fallocate = ff_fallocate,
    .flock = ff_flock,
    .lseek = ff_lseek,
    .copy_file_range = ff_copy_file_range,
    .setxattr = ff_setxattr,
    .getxattr = ff_getxattr,
    .listxattr = ff_listxattr,
    .removexattr = ff_removexattr,
};

int main(int argc, char *argv[])
{
    if (argc < 3 || argv[1][0] == '-' || argv[2][0] == '-') {
        fprintf(stderr,
                "usage: %s <backing_dir> <mount_point> [fuse options]\n"
                "control files in <backing_dir>: " CTL_FSYNC " " CTL_WRITE
                " " CTL_FALLOCATE " " CTL_FLUSH "\n",
                argv[0]);
        return 2;
    }
    backing_fd = open(argv[1], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (backing_fd == -1) {
        fprintf(stderr, "faultfs: cannot open backing dir %s: %s\n", argv[1],
                strerror(errno));
        return 1;
    }
    /* Fresh trash dir for files unlinked while open (see rel_buf). */
    if (mkdirat(backing_fd, TRASH, 0700) == -1 && errno != EEXIST) {
        fprintf(stderr, "faultfs: cannot create %s/" TRASH ": %s\n", argv[1],
                strerror(errno));
        return 1;
    }
    int tfd = openat(backing_fd, TRASH, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DIR *td = tfd == -1 ? NULL : fdopendir(tfd);
    if (td) {
        struct dirent *e;
        while ((e = readdir(td)))
            if (e->d_name[0] != '.' || strncmp(e->d_name, HIDDEN_PREFIX, strlen(HIDDEN_PREFIX)) == 0)
                unlinkat(tfd, e->d_name, 0);
        closedir(td);
    }
    umask(0);

    /* argv for fuse_main: prog, mount_point, -f, then the caller's options. */
    char **fargv = calloc(argc + 2, sizeof(char *));
    int fargc = 0;
    fargv[fargc++] = argv[0];
    fargv[fargc++] = argv[2];
    fargv[fargc++] = "-f";
    for (int i = 3; i < argc; i++)
        fargv[fargc++] = argv[i];
    fargv[fargc] = NULL;
    int rc = fuse_main(fargc, fargv, &ff_ops, NULL);
    free(fargv);
    return rc;
}
