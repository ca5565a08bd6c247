// SPDX-License-Identifier: Apache-2.0
/*
 * mrce_ctrl.c - the provider's side of the local control protocol
 * (mrce_abi.h): one request, one response, then the response's fds, each
 * as SCM_RIGHTS on a single zero byte.
 *
 * Every read is exact-sized and done with recvmsg so that an fd can never be
 * dropped by a read that runs into the next message.
 */
#include <dirent.h>
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "mrce.h"

#define MRCE_MAX_FDS 4

int mrce_sock_path(char *buf, size_t len)
{
	const char *env = getenv("METAROCE_SOCK");
	struct stat st;
	int n;

	if (env && *env) {
		n = snprintf(buf, len, "%s", env);
	} else {
		if (stat("/proc/self/ns/net", &st))
			return errno;
		n = snprintf(buf, len, MRCE_SOCK_DIR "/nicd-%lu.sock",
			     (unsigned long)st.st_ino);
	}
	return n < 0 || (size_t)n >= len ? ENAMETOOLONG : 0;
}

static int mrce_path_cmp(const void *a, const void *b)
{
	return strverscmp((const char *)a, (const char *)b);
}

/*
 * The control sockets of every device of this netns, mrce0's first
 * (mrce_sock_path: it is listed even when absent, so that the one-NIC
 * messages stay as they were), then each nicd-<ino>-NAME.sock of
 * MRCE_SOCK_DIR in version order (mrce2 before mrce10), the admin sockets
 * beside them left out. $METAROCE_SOCK names one socket: only that one.
 * Returns how many paths were written (at most max), or -errno.
 */
int mrce_sock_paths(char (*paths)[MRCE_SOCK_PATH_MAX], int max)
{
	const char *env = getenv("METAROCE_SOCK");
	char prefix[64];
	struct dirent *de;
	struct stat st;
	DIR *dir;
	int n = 0, ret;

	if (max < 1)
		return 0;
	ret = mrce_sock_path(paths[0], MRCE_SOCK_PATH_MAX);
	if (ret)
		return -ret;
	n = 1;
	if ((env && *env) || stat("/proc/self/ns/net", &st))
		return n;
	snprintf(prefix, sizeof(prefix), "nicd-%lu-", (unsigned long)st.st_ino);
	dir = opendir(MRCE_SOCK_DIR);
	if (!dir)
		return n;
	while (n < max && (de = readdir(dir)) != NULL) {
		size_t len = strlen(de->d_name), plen = strlen(prefix);

		if (len <= plen + 5 || strncmp(de->d_name, prefix, plen) != 0 ||
		    strcmp(de->d_name + len - 5, ".sock") != 0 ||
		    (len > 11 && strcmp(de->d_name + len - 11, ".admin.sock") == 0))
			continue;
		if (snprintf(paths[n], MRCE_SOCK_PATH_MAX, MRCE_SOCK_DIR "/%s",
			     de->d_name) >= MRCE_SOCK_PATH_MAX)
			continue;
		n++;
	}
	closedir(dir);
	qsort(paths + 1, (size_t)(n - 1), sizeof(paths[0]), mrce_path_cmp);
	return n;
}

/*
 * Whoever binds the socket path first would otherwise be "the daemon": trust
 * a peer only when it runs as root, as this process's user (an unprivileged
 * daemon), or as $METAROCE_DAEMON_UID. Then, and only then, let it read and
 * write our memory under Yama ptrace_scope 1 (the kernel's word for its PID,
 * not one taken from a reply).
 */
static int mrce_check_daemon(int fd, const char *path)
{
	const char *env = secure_getenv("METAROCE_DAEMON_UID"); /* not in setuid apps */
	struct ucred cred;
	socklen_t len = sizeof(cred);
	char *end;

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len))
		return errno;
	if (cred.uid == 0 || cred.uid == getuid() || cred.uid == geteuid())
		goto trusted;
	if (env && *env) {
		unsigned long uid = strtoul(env, &end, 10);

		if (*end == '\0' && uid == cred.uid)
			goto trusted;
	}
	fprintf(stderr,
		"metaroce: refusing %s: its server runs as uid %u (pid %d), "
		"not root, this user (uid %u) or METAROCE_DAEMON_UID\n",
		path, (unsigned int)cred.uid, (int)cred.pid,
		(unsigned int)getuid());
	return EACCES;

trusted:
	prctl(PR_SET_PTRACER, (unsigned long)cred.pid, 0, 0, 0);
	return 0;
}

int mrce_conn_open(struct mrce_conn *conn, int timeout_ms)
{
	char path[MRCE_SOCK_PATH_MAX];
	int ret;

	ret = mrce_sock_path(path, sizeof(path));
	if (ret)
		return ret;
	return mrce_conn_open_at(conn, path, timeout_ms);
}

/* Connects to the daemon socket PATH and checks who serves it. */
int mrce_conn_open_at(struct mrce_conn *conn, const char *path, int timeout_ms)
{
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	struct timeval tv = { .tv_sec = timeout_ms / 1000,
			      .tv_usec = (timeout_ms % 1000) * 1000 };
	int ret;

	if (strlen(path) >= sizeof(addr.sun_path))
		return ENAMETOOLONG;
	strcpy(addr.sun_path, path);
	conn->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (conn->fd < 0)
		return errno;
	if (setsockopt(conn->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) ||
	    setsockopt(conn->fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)))
		goto err_close;
	if (connect(conn->fd, (struct sockaddr *)&addr, sizeof(addr)))
		goto err_close;
	ret = mrce_check_daemon(conn->fd, addr.sun_path);
	if (ret) {
		close(conn->fd);
		conn->fd = -1;
		return ret;
	}
	conn->seq = 0;
	conn->dead = false;
	pthread_mutex_init(&conn->lock, NULL);
	return 0;

err_close:
	ret = errno;
	close(conn->fd);
	conn->fd = -1;
	return ret;
}

void mrce_conn_close(struct mrce_conn *conn)
{
	if (conn->fd >= 0)
		close(conn->fd);
	conn->fd = -1;
	pthread_mutex_destroy(&conn->lock);
}

int mrce_send_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len) {
		ssize_t n = send(fd, p, len, MSG_NOSIGNAL);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return EIO;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/*
 * Reads exactly len bytes; fds that ride along are appended to fds[] (up to
 * max, the rest are closed) and counted in *nfds. Also the framing of the
 * rdma_cm library's pipelined connection (rdmacm_conn.c), with max 0.
 */
int mrce_recv_exact(int fd, void *buf, size_t len, int *fds,
		      unsigned int max, unsigned int *nfds)
{
	char *p = buf;

	while (len) {
		union {
			char buf[CMSG_SPACE(MRCE_MAX_FDS * sizeof(int))];
			struct cmsghdr align;
		} cbuf;
		struct iovec iov = { .iov_base = p, .iov_len = len };
		struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1,
				      .msg_control = cbuf.buf,
				      .msg_controllen = sizeof(cbuf.buf) };
		struct cmsghdr *cm;
		ssize_t n = recvmsg(fd, &msg, MSG_CMSG_CLOEXEC);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return EIO;
		for (cm = CMSG_FIRSTHDR(&msg); cm; cm = CMSG_NXTHDR(&msg, cm)) {
			size_t i, cnt;

			if (cm->cmsg_level != SOL_SOCKET ||
			    cm->cmsg_type != SCM_RIGHTS)
				continue;
			cnt = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
			for (i = 0; i < cnt; i++) {
				int got;

				memcpy(&got, CMSG_DATA(cm) + i * sizeof(int),
				       sizeof(int));
				if (*nfds < max)
					fds[(*nfds)++] = got;
				else
					close(got);
			}
		}
		if (msg.msg_flags & MSG_CTRUNC)
			return EIO;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

static void close_fds(int *fds, unsigned int n)
{
	while (n--)
		close(fds[n]);
}

/*
 * Sends one request and waits for its response. On success the response
 * payload (exactly resp_len bytes) is in resp and exactly nfds fds are in
 * fds[]. Returns 0, the daemon's errno, or EIO when the connection broke
 * (the connection is then dead for good).
 */
int mrce_conn_call(struct mrce_conn *conn, uint16_t op, const void *req,
		   uint32_t req_len, void *resp, uint32_t resp_len, int *fds,
		   unsigned int nfds)
{
	uint8_t frame[MRCE_CTRL_MAX_FRAME];
	struct mrce_ctrl_hdr *hdr = (struct mrce_ctrl_hdr *)frame;
	int got_fds[MRCE_MAX_FDS];
	unsigned int ngot = 0;
	uint32_t payload;
	int ret;

	if (req_len > MRCE_CTRL_MAX_FRAME - sizeof(*hdr) || nfds > MRCE_MAX_FDS)
		return EINVAL;
	pthread_mutex_lock(&conn->lock);
	if (__atomic_load_n(&conn->dead, __ATOMIC_ACQUIRE)) {
		ret = EIO;
		goto out_unlock;
	}
	memset(hdr, 0, sizeof(*hdr));
	hdr->len = (uint32_t)sizeof(*hdr) + req_len;
	hdr->op = op;
	hdr->seq = ++conn->seq;
	if (req_len)
		memcpy(frame + sizeof(*hdr), req, req_len);
	ret = mrce_send_all(conn->fd, frame, hdr->len);
	if (ret)
		goto out_dead;

	ret = mrce_recv_exact(conn->fd, hdr, sizeof(*hdr), got_fds, MRCE_MAX_FDS,
			 &ngot);
	if (ret)
		goto out_dead;
	if (hdr->len < sizeof(*hdr) || hdr->len > MRCE_CTRL_MAX_FRAME ||
	    hdr->op != op || hdr->seq != conn->seq || hdr->nfds > MRCE_MAX_FDS)
		goto out_proto;
	payload = hdr->len - (uint32_t)sizeof(*hdr);
	ret = mrce_recv_exact(conn->fd, frame + sizeof(*hdr), payload, got_fds,
			 MRCE_MAX_FDS, &ngot);
	if (ret)
		goto out_dead;
	if (hdr->nfds) {
		uint8_t zeros[MRCE_MAX_FDS];

		ret = mrce_recv_exact(conn->fd, zeros, hdr->nfds, got_fds,
				 MRCE_MAX_FDS, &ngot);
		if (ret)
			goto out_dead;
	}
	if (ngot != hdr->nfds)
		goto out_proto;
	if (hdr->status) {
		ret = hdr->status;
		close_fds(got_fds, ngot);
		goto out_unlock;
	}
	if (payload < resp_len || ngot < nfds)
		goto out_proto;
	if (resp_len)
		memcpy(resp, frame + sizeof(*hdr), resp_len);
	if (nfds) /* fds may be NULL then: memcpy(NULL, ..., 0) is undefined */
		memcpy(fds, got_fds, nfds * sizeof(int));
	close_fds(got_fds + nfds, ngot - nfds);
	pthread_mutex_unlock(&conn->lock);
	return 0;

out_proto:
out_dead:
	/* fds that came with a broken or cut-off response are ours to close */
	close_fds(got_fds, ngot);
	__atomic_store_n(&conn->dead, true, __ATOMIC_RELEASE);
	ret = EIO;
out_unlock:
	pthread_mutex_unlock(&conn->lock);
	return ret;
}

/*
 * HELLO: fds[0] = doorbell eventfd, fds[1] = async eventfd, and with
 * MRCE_HELLO_DOORBELL_PAGE in flags fds[2] = the doorbell page's memfd.
 */
int mrce_hello(struct mrce_conn *conn, struct mrce_hello_resp *resp, int *fds,
	       uint32_t flags)
{
	struct mrce_hello_req req = { .abi_version = MRCE_ABI_VERSION,
				      .flags = flags };
	unsigned int nfds = (flags & MRCE_HELLO_DOORBELL_PAGE) ? 3 : 2;
	int ret;

	ret = mrce_conn_call(conn, MRCE_OP_HELLO, &req, sizeof(req), resp,
			     sizeof(*resp), fds, nfds);
	if (ret)
		return ret;
	if (resp->abi_version != MRCE_ABI_VERSION) {
		close_fds(fds, nfds);
		return EPROTO;
	}
	resp->dev_name[sizeof(resp->dev_name) - 1] = '\0';
	resp->ifname[sizeof(resp->ifname) - 1] = '\0';
	return 0;
}
