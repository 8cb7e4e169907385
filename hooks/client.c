/* deja-client: the thin way into the warm server (deja serve), in two builds.
 *
 * A hook is paid for on every prompt and every tool call, and a search on
 * every question; Python's own start costs more than a warm answer takes.
 * This program speaks the Python client's protocol (pipeline/serve_client.py),
 * hands the server its stdin, stdout and stderr, and exits when the server's
 * process has answered. Whenever it cannot be served (no server, a hung or
 * babbling one, one of other code, DEJA_SERVE=off, a command the server does
 * not answer) it becomes the Python `deja` itself, with the same arguments and
 * its stdin untouched, and that starts a server for next time.
 *
 * - The hook client (`deja install` compiles it beside the hook launcher,
 *   hooks/client_build.py): hooks only; the Python deja is $DEJA_REAL, the
 *   executable the launcher found; it always exits 0 (a hook never fails the
 *   agent).
 * - The `deja` executable (compiled with -DDEJA_MAIN when the package is
 *   built, setup.py): the hooks and the hot commands (serve_client.SERVED,
 *   and bare words, which are a search); the Python deja is `deja-py` beside
 *   it; it exits with the command's status.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

#define ACK_MS 500 /* as serve_client.ACK_S */

static char **args;

#ifdef DEJA_MAIN
/* Python's deja, installed beside this program as deja-py */
static void fallback(void) {
    char path[4096];
    ssize_t n = readlink("/proc/self/exe", path, sizeof path - 16);
    if (n > 0) {
        path[n] = 0;
    } else if (strchr(args[0], '/')) {
        snprintf(path, sizeof path - 16, "%s", args[0]);
    } else {
        path[0] = 0;
    }
    char *slash = strrchr(path, '/');
    if (slash) {
        strcpy(slash + 1, "deja-py");
        args[0] = path;
        execv(path, args);
    }
    args[0] = "deja-py";
    execvp("deja-py", args);
    fprintf(stderr, "deja: cannot run deja-py, the Python side of deja, beside %s (reinstall deja)\n", path);
    _exit(1);
}
#else
static void fallback(void) {
    const char *real = getenv("DEJA_REAL");
    if (real && *real) {
        args[0] = (char *)real;
        execv(real, args);
    }
    _exit(0); /* no deja to run: a hook prints nothing and never fails the agent */
}
#endif

/* the server was reached but did not take the command: the deja run next
   answers in-process at once (after starting a fresh server, when this one
   is of other code) instead of asking it again */
static void give_up(const char *why) {
    setenv("DEJA_SERVE_ASKED", why, 1);
    fallback();
}

static const char *HOOKS[] = {"hook-context", "hook-prompt", "hook-tool", "hook-tool-after",
                              "hook-precompact", NULL};

static int listed(const char *a, const char **list) {
    for (int i = 0; list[i]; i++)
        if (strcmp(a, list[i]) == 0) return 1;
    return 0;
}

static int is_hook(const char *a) { return listed(a, HOOKS); }

#ifdef DEJA_MAIN
/* serve_client.SERVED, and entry.COMMANDS (tests/test_cli.py keeps them in step) */
static const char *SERVED[] = {"search", "last", "show", "ctx", "blame", "how", "fix", NULL};
static const char *COMMANDS[] = {
    "index", "embed", "doctor", "search", "demo", "recover", "last", "show", "ctx", "hook-context",
    "hook-prompt", "hook-tool", "hook-tool-after", "hook-precompact", "install", "uninstall", "blame",
    "files", "how", "fix", "friction", "remember", "promote", "forget", "stats", "view", "completion",
    "version", "sources", "mcp", "serve", "resume", "handoff", "restore", "share", "sync", "team", NULL};

/* entry.main's choice: a hook or hot command, or bare words (a search), and
   not a --help, a shell asking for completions or a page for the terminal */
static int is_served(int argc, char **argv) {
    if (argc < 2 || getenv("_DEJA_COMPLETE")) return 0;
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) return 0;
    const char *a = argv[1];
    if (a[0] == '-') return 0;
    if (is_hook(a)) return 1;
    if (listed(a, SERVED)) return strcmp(a, "show") != 0 || !isatty(1);
    return !listed(a, COMMANDS);
}
#endif

static uint64_t fnv(const char *s, size_t n) {
    uint64_t h = 0xCBF29CE484222325ULL;
    for (size_t i = 0; i < n; i++) {
        h ^= (unsigned char)s[i];
        h *= 0x100000001B3ULL;
    }
    return h;
}

/* serve_client.socket_path, letter for letter */
static int socket_path(char *out, size_t size) {
    const char *home = getenv("HOME");
    const char *index = getenv("DEJA_INDEX_DIR");
    char key[4096];
    int n = snprintf(key, sizeof key, "%s%c%s", home ? home : "", 0, index ? index : "");
    if (n < 0 || (size_t)n >= sizeof key) return -1;
    char hex[17];
    snprintf(hex, sizeof hex, "%016llx", (unsigned long long)fnv(key, (size_t)n));
    hex[12] = 0;
    char dir[4096];
    const char *xdg = getenv("XDG_RUNTIME_DIR");
    struct stat st;
    if (xdg && *xdg && stat(xdg, &st) == 0 && S_ISDIR(st.st_mode) && access(xdg, W_OK) == 0) {
        n = snprintf(dir, sizeof dir, "%s/deja", xdg);
    } else {
        const char *h = home;
        if (!h || !*h) {
            struct passwd *pw = getpwuid(getuid());
            h = pw ? pw->pw_dir : "";
        }
        const char *cache = getenv("XDG_CACHE_HOME");
        if (cache && *cache)
            n = snprintf(dir, sizeof dir, "%s/deja/run", cache);
        else
            n = snprintf(dir, sizeof dir, "%s/.cache/deja/run", h);
    }
    if (n < 0 || (size_t)n >= sizeof dir) return -1;
    n = snprintf(out, size, "%s/s-%s.sock", dir, hex);
    if (n < 0 || (size_t)n >= size) return -1;
    if (strlen(out) > 100) { /* a deep HOME: the temp dir, as Python's tempfile.gettempdir() picks it */
        const char *tmp = NULL;
        const char *cands[] = {getenv("TMPDIR"), getenv("TEMP"), getenv("TMP"), "/tmp", "/var/tmp", "/usr/tmp", NULL};
        for (int i = 0; cands[i] || i < 3; i++) {
            if (cands[i] && *cands[i] && access(cands[i], W_OK | X_OK) == 0) {
                tmp = cands[i];
                break;
            }
        }
        if (!tmp) return -1;
        n = snprintf(out, size, "%s/deja-%u/s-%s.sock", tmp, (unsigned)getuid(), hex);
        if (n < 0 || (size_t)n >= size) return -1;
    }
    return 0;
}

static int wait_readable(int fd, int ms) {
    struct pollfd p = {.fd = fd, .events = POLLIN};
    int r;
    do {
        r = poll(&p, 1, ms);
    } while (r < 0 && errno == EINTR);
    return r > 0;
}

/* one reply line, without its newline; "" on silence, garbage or a timeout */
static void read_line(int fd, char *buf, size_t size, int ms) {
    size_t n = 0;
    buf[0] = 0;
    while (n + 1 < size) {
        if (ms >= 0 && !wait_readable(fd, ms)) {
            buf[0] = 0;
            return;
        }
        ssize_t got = read(fd, buf + n, 1);
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) break;
        if (buf[n] == '\n') {
            buf[n] = 0;
            return;
        }
        n++;
    }
    buf[n] = 0;
    if (n + 1 >= size) buf[0] = 0;
}

static int send_all(int fd, const char *p, size_t n) {
    while (n) {
        ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

static volatile pid_t target;
static volatile int warm;

static void forward(int sig) {
    if (target > 0) kill(target, warm ? SIGINT : sig);
}

int main(int argc, char **argv) {
    args = argv;
    const char *off = getenv("DEJA_SERVE");
#ifdef DEJA_MAIN
    int hook = argc >= 2 && is_hook(argv[1]);
    if (!is_served(argc, argv)) fallback();
#else
    if (argc < 2 || !is_hook(argv[1])) fallback();
#endif
    if (getenv("DEJA_SERVE_ASKED")) fallback(); /* a client before this one asked already */
    if (off && (!strcasecmp(off, "off") || !strcmp(off, "0") || !strcasecmp(off, "no") || !strcasecmp(off, "false")))
        fallback();
    char path[4096];
    if (socket_path(path, sizeof path) != 0) fallback();
    struct sockaddr_un addr = {.sun_family = AF_UNIX};
    if (strlen(path) >= sizeof addr.sun_path) fallback();
    strcpy(addr.sun_path, path);
    int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (s < 0) fallback();
    if (connect(s, (struct sockaddr *)&addr, sizeof addr) != 0) {
        close(s);
        fallback(); /* deja itself starts a server for next time */
    }
    /* the request: DEJA2 <length>\n, then NUL-separated fields (serve_client.encode_request) */
    char cwd[4096];
    if (!getcwd(cwd, sizeof cwd)) {
        const char *h = getenv("HOME");
        snprintf(cwd, sizeof cwd, "%s", h ? h : "/");
    }
    /* the code key: empty (the server checks that its own code is current),
       or what a test forces, as the Python client's code_key() */
    const char *code = getenv("DEJA_SERVE_CODE");
    if (!code) code = "";
    size_t len = strlen(code);
    char nargs[32];
    snprintf(nargs, sizeof nargs, "%d", argc - 1);
    len += 1 + strlen(cwd) + 1 + strlen(nargs);
    for (int i = 1; i < argc; i++) len += 1 + strlen(argv[i]);
    for (char **e = environ; *e; e++) len += 1 + strlen(*e);
    char head[64];
    int hn = snprintf(head, sizeof head, "DEJA2 %zu\n", len);
    char *msg = malloc((size_t)hn + len + 1);
    if (!msg) fallback();
    char *p = msg;
    memcpy(p, head, (size_t)hn);
    p += hn;
    p = stpcpy(p, code) + 1;
    p = stpcpy(p, cwd) + 1;
    p = stpcpy(p, nargs);
    for (int i = 1; i < argc; i++) {
        *p++ = 0;
        p = stpcpy(p, argv[i]);
    }
    for (char **e = environ; *e; e++) {
        *p++ = 0;
        p = stpcpy(p, *e);
    }
    if (send_all(s, msg, (size_t)(p - msg)) != 0) {
        close(s);
        give_up("failed");
    }
    free(msg);
    char line[256];
    read_line(s, line, sizeof line, ACK_MS);
    if (strcmp(line, "go") != 0) { /* stale, garbage or silence: nothing ran */
        close(s);
        give_up(strcmp(line, "stale") == 0 ? "stale" : "failed");
    }
    int fds[3] = {0, 1, 2};
    char byte = 'F';
    struct iovec iov = {.iov_base = &byte, .iov_len = 1};
    union {
        char buf[CMSG_SPACE(sizeof fds)];
        struct cmsghdr align;
    } u;
    memset(&u, 0, sizeof u);
    struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf, .msg_controllen = sizeof u.buf};
    struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof fds);
    memcpy(CMSG_DATA(c), fds, sizeof fds);
    ssize_t sent;
    do {
        sent = sendmsg(s, &mh, MSG_NOSIGNAL);
    } while (sent < 0 && errno == EINTR);
    if (sent != 1) {
        close(s);
        give_up("failed");
    }
    read_line(s, line, sizeof line, ACK_MS);
    if (strncmp(line, "ok ", 3) != 0) {
        close(s);
        give_up("failed");
    }
    /* the command runs, writing to our stdout: wait for its end, passing on
       the signals meant for it (a warm process is only ever interrupted) */
    char *end;
    long pid = strtol(line + 3, &end, 10);
    warm = strstr(end, "warm") != NULL;
    target = (pid_t)pid;
    struct sigaction sa = {.sa_handler = forward};
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
    read_line(s, line, sizeof line, -1);
    close(s);
#ifdef DEJA_MAIN
    if (hook) return 0; /* a hook never fails the agent, whatever its status */
    if (strncmp(line, "exit ", 5) == 0) return (int)strtol(line + 5, NULL, 10);
    /* the command died unheard; not run again here: it may have written part of its answer */
    static const char died[] = "deja: the warm server's process ended before its answer was complete; "
                               "run it again (DEJA_SERVE=off answers here)\n";
    if (write(2, died, sizeof died - 1) < 0) return 1;
    return 1;
#else
    return 0; /* a hook never fails the agent, whatever its status */
#endif
}
