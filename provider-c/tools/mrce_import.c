// SPDX-License-Identifier: Apache-2.0
/*
 * mrce_import - a PD and an MR shared between two processes, for ImportIT.
 *
 *   mrce_import [-d DEV] [-g GIDX] [-t SECONDS]
 *
 * The exporter (this process) opens DEV, allocates a PD, registers a buffer
 * (filled with 0xa5) and a second MR, makes an RC QP on the PD, then starts
 * the importer (itself again, exec'd, so it inherits no verbs state) and
 * passes it the context's cmd_fd by SCM_RIGHTS with the PD and MR handles.
 * The importer checks that ibv_import_device refuses fds that are no context
 * (a pipe, a memfd forged with the same contents), imports the device, the
 * PD and the MR (and refuses unknown handles), makes its own CQ, QP and source
 * MR on the imported PD, connects to the exporter's QP and RDMA WRITEs a
 * pattern into the exporter's buffer at the imported MR's address with its
 * rkey; the imported lkey as a source of its own QP completes with
 * IBV_WC_LOC_PROT_ERR (a process's QPs reach only its own memory). Destroying
 * imported objects is the exporter's (EPERM); a handle the
 * exporter deregistered meanwhile is stale (ENOENT); an unimported PD can be
 * imported again. The exporter then checks every byte of its buffer: the
 * pattern where it was written, 0xa5 everywhere else. A second importer
 * that imported another PD is killed holding it: the exporter's
 * ibv_dealloc_pd of that PD is EBUSY before, and succeeds once the daemon
 * dropped the dead process's reference. ibv_alloc_td and
 * ibv_alloc_parent_domain answer EOPNOTSUPP.
 * Lines: "CHECK name: PASS|FAIL detail", then "mrce_import: importer OK" and
 * "mrce_import: exporter OK"; any failure prints "mrce_import: FAIL ..." and
 * exits 1.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <signal.h>
#include <unistd.h>

#include "mrce_tool_common.h"

#define BUF_LEN (128 * 1024)
#define PAT_OFF 8192
#define PAT_LEN (48 * 1024 + 77)

/* What the exporter tells the importer, with the cmd_fd alongside. */
struct offer {
	uint32_t pd_handle;
	uint32_t mr_handle;
	uint32_t spare_mr_handle; /* deregistered before the importer asks */
	uint32_t qpn[2];
	uint8_t gid[16];
	uint64_t addr;            /* what ibv_import_mr must report */
	uint64_t length;
	uint32_t lkey, rkey;
};

struct answer {
	uint32_t qpn[2];
};

static uint8_t pattern(size_t i)
{
	return (uint8_t)tool_mix(0x1a2b0000u + i);
}

static void send_fd(int sock, int fd, const void *buf, size_t len)
{
	char cbuf[CMSG_SPACE(sizeof(int))];
	struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1,
			      .msg_control = cbuf,
			      .msg_controllen = sizeof(cbuf) };
	struct cmsghdr *c;

	memset(cbuf, 0, sizeof(cbuf));
	c = CMSG_FIRSTHDR(&msg);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(c), &fd, sizeof(int));
	if (sendmsg(sock, &msg, 0) != (ssize_t)len)
		tool_fail("sendmsg: %s", strerror(errno));
}

static int recv_fd(int sock, void *buf, size_t len)
{
	char cbuf[CMSG_SPACE(sizeof(int))];
	struct iovec iov = { .iov_base = buf, .iov_len = len };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1,
			      .msg_control = cbuf,
			      .msg_controllen = sizeof(cbuf) };
	struct cmsghdr *c;
	int fd;

	if (recvmsg(sock, &msg, MSG_CMSG_CLOEXEC) != (ssize_t)len)
		tool_fail("recvmsg: %s", strerror(errno));
	c = CMSG_FIRSTHDR(&msg);
	if (!c || c->cmsg_type != SCM_RIGHTS)
		tool_fail("no fd came with the offer");
	memcpy(&fd, CMSG_DATA(c), sizeof(int));
	return fd;
}

static void check_no_td(struct ibv_context *ctx, struct ibv_pd *pd)
{
	struct ibv_td_init_attr ta = { 0 };
	struct ibv_parent_domain_init_attr pa = { .pd = pd };
	struct ibv_td *td;
	struct ibv_pd *parent;

	errno = 0;
	td = ibv_alloc_td(ctx, &ta);
	tool_check("alloc_td_eopnotsupp", !td && errno == EOPNOTSUPP,
		   "%s", td ? "allocated" : strerror(errno));
	errno = 0;
	parent = ibv_alloc_parent_domain(ctx, &pa);
	tool_check("parent_domain_eopnotsupp", !parent && errno == EOPNOTSUPP,
		   "%s", parent ? "allocated" : strerror(errno));
}

/* ibv_import_device must refuse fds that are no context of a daemon. */
static void check_bad_fds(void)
{
	struct ibv_context *c;
	int p[2], forged;

	if (pipe(p))
		tool_fail("pipe: %s", strerror(errno));
	errno = 0;
	c = ibv_import_device(p[0]);
	tool_check("import_pipe_refused", c == NULL, "errno %d (%s)", errno,
		   strerror(errno));
	close(p[0]);
	close(p[1]);
	/* The token's contents are no key: the daemon checks the file itself. */
	forged = memfd_create("mrce-context", MFD_CLOEXEC);
	if (forged < 0)
		tool_fail("memfd_create: %s", strerror(errno));
	{
		const uint32_t tok[6] = { 0x5854434du, 2, 0x6563726d, 0x30 };

		if (write(forged, tok, sizeof(tok)) != (ssize_t)sizeof(tok))
			tool_fail("write");
	}
	errno = 0;
	c = ibv_import_device(forged);
	tool_check("import_forged_refused", c == NULL && errno == EINVAL,
		   "errno %d (%s)", errno, strerror(errno));
	close(forged);
}

static int importer(int sock, int gidx)
{
	struct offer o;
	struct answer a = { 0 };
	struct ibv_context *ctx;
	struct ibv_pd *pd, *bad_pd;
	struct ibv_mr *mr, *src_mr, *bad_mr;
	struct ibv_cq *cq;
	struct ibv_qp *qp, *qp2;
	uint8_t *src;
	int fd, st, ret;
	char go;

	fd = recv_fd(sock, &o, sizeof(o));
	check_bad_fds();
	ctx = ibv_import_device(fd);
	tool_check("import_device", ctx != NULL, "%s",
		   ctx ? ctx->device->name : strerror(errno));
	tool_check("cmd_fd_is_the_given_fd", ctx->cmd_fd == fd, "cmd_fd %d, fd %d",
		   ctx->cmd_fd, fd);
	errno = 0;
	bad_pd = ibv_import_pd(ctx, 0x7fffff00u);
	tool_check("import_pd_unknown_handle", !bad_pd && errno == ENOENT,
		   "errno %d (%s)", errno, strerror(errno));
	pd = ibv_import_pd(ctx, o.pd_handle);
	tool_check("import_pd", pd && pd->handle == o.pd_handle &&
		   pd->context == ctx, "%s", pd ? "ok" : strerror(errno));
	errno = 0;
	bad_mr = ibv_import_mr(pd, 0x7fffff00u);
	tool_check("import_mr_unknown_handle", !bad_mr && errno == ENOENT,
		   "errno %d (%s)", errno, strerror(errno));
	mr = ibv_import_mr(pd, o.mr_handle);
	tool_check("import_mr", mr && mr->handle == o.mr_handle &&
		   (uintptr_t)mr->addr == o.addr && mr->length == o.length &&
		   mr->lkey == o.lkey && mr->rkey == o.rkey && mr->pd == pd,
		   "%s", mr ? "addr, length and keys as registered" :
		   strerror(errno));
	check_no_td(ctx, pd);

	/* The importer's own objects on the imported PD. */
	src = malloc(PAT_LEN);
	if (!src)
		tool_fail("malloc");
	for (size_t i = 0; i < PAT_LEN; i++)
		src[i] = pattern(i);
	src_mr = ibv_reg_mr(pd, src, PAT_LEN, IBV_ACCESS_LOCAL_WRITE);
	cq = ibv_create_cq(ctx, 8, NULL, NULL, 0);
	if (!src_mr || !cq)
		tool_fail("reg_mr/create_cq on the imported PD: %s",
			  strerror(errno));
	qp = tool_rc_qp(pd, cq);
	qp2 = tool_rc_qp(pd, cq);
	a.qpn[0] = qp->qp_num;
	a.qpn[1] = qp2->qp_num;
	tool_rc_to_rts(qp, o.qpn[0], o.gid, gidx);
	tool_rc_to_rts(qp2, o.qpn[1], o.gid, gidx);
	tool_write_all(sock, &a, sizeof(a));
	tool_read_all(sock, &go, 1); /* the exporter's QP is ready */
	st = tool_rc_write_wait(qp, cq, src_mr, src, PAT_LEN,
				(uintptr_t)mr->addr + PAT_OFF, mr->rkey, 1);
	tool_check("rdma_write_into_exporters_mr", st == IBV_WC_SUCCESS,
		   "status %s, %d bytes, crc 0x%08x", ibv_wc_status_str(st),
		   PAT_LEN, tool_crc32(src, PAT_LEN));
	/*
	 * The imported lkey names the exporter's memory: this process's QPs
	 * never reach it (nothing is read, nothing lands).
	 */
	st = tool_rc_write_wait(qp2, cq, mr, mr->addr, 4096,
				(uintptr_t)mr->addr + BUF_LEN - 4096, mr->rkey, 2);
	tool_check("imported_lkey_not_local", st == IBV_WC_LOC_PROT_ERR,
		   "status %s", ibv_wc_status_str(st));

	/* Destroying is the exporter's; the importer unimports. */
	ret = ibv_dereg_mr(mr);
	tool_check("dereg_imported_mr_eperm", ret == EPERM, "ret %d", ret);
	ret = ibv_dealloc_pd(pd);
	tool_check("dealloc_imported_pd_eperm", ret == EPERM, "ret %d", ret);
	errno = 0;
	bad_mr = ibv_import_mr(pd, o.spare_mr_handle);
	tool_check("import_mr_stale_handle", !bad_mr && errno == ENOENT,
		   "errno %d (%s)", errno, strerror(errno));
	ibv_unimport_mr(mr);
	if (ibv_destroy_qp(qp) || ibv_destroy_qp(qp2) || ibv_destroy_cq(cq) ||
	    ibv_dereg_mr(src_mr))
		tool_fail("destroy own objects: %s", strerror(errno));
	ibv_unimport_pd(pd);
	/* Unimporting dropped this process's reference only: the PD is there. */
	pd = ibv_import_pd(ctx, o.pd_handle);
	tool_check("reimport_after_unimport", pd != NULL, "%s",
		   pd ? "the exporter's PD lives on" : strerror(errno));
	mr = ibv_import_mr(pd, o.mr_handle);
	tool_check("reimport_mr_after_unimport", mr && mr->rkey == o.rkey,
		   "%s", mr ? "same keys" : strerror(errno));
	ibv_unimport_mr(mr);
	ibv_unimport_pd(pd);
	if (ibv_close_device(ctx))
		tool_fail("close_device");
	{
		struct stat sb;

		tool_check("close_device_closed_cmd_fd",
			   fstat(fd, &sb) == -1 && errno == EBADF, "fd %d", fd);
	}
	free(src);
	tool_write_all(sock, "d", 1);
	printf("mrce_import: importer OK\n");
	return 0;
}

/*
 * A second importer that takes a reference to the PD and is killed holding
 * it: the daemon must drop that reference, and only it.
 */
static int holder(int sock)
{
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct offer o;
	char c;
	int fd;

	fd = recv_fd(sock, &o, sizeof(o));
	ctx = ibv_import_device(fd);
	pd = ctx ? ibv_import_pd(ctx, o.pd_handle) : NULL;
	if (!pd)
		tool_fail("holder: import: %s", strerror(errno));
	tool_write_all(sock, "i", 1);
	tool_read_all(sock, &c, 1); /* until killed */
	return 1;
}

/* Starts this program again as an importer ("-c") or holder ("-k") on sv[1]. */
static pid_t start_importer(const char *self, const char *mode, int sv[2],
			    int gidx, int timeout)
{
	pid_t pid;

	/* SOCK_CLOEXEC on our end only: the importer keeps sv[1] over exec. */
	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) ||
	    fcntl(sv[0], F_SETFD, FD_CLOEXEC))
		tool_fail("socketpair: %s", strerror(errno));
	pid = fork();
	if (pid < 0)
		tool_fail("fork: %s", strerror(errno));
	if (pid == 0) {
		char fdarg[16], garg[16], targ[16];

		snprintf(fdarg, sizeof(fdarg), "%d", sv[1]);
		snprintf(garg, sizeof(garg), "%d", gidx);
		snprintf(targ, sizeof(targ), "%d", timeout);
		execl(self, self, "-g", garg, "-t", targ, mode, fdarg,
		      (char *)NULL);
		printf("mrce_import: FAIL exec %s: %s\n", self, strerror(errno));
		_exit(1);
	}
	close(sv[1]);
	return pid;
}

/*
 * The exporter's dealloc of a PD a killed importer held: EBUSY while held,
 * then 0 once the daemon saw the process go (a bounded poll: the daemon
 * reclaims a dead process's session on its own thread).
 */
static void check_killed_holder(const char *self, struct ibv_context *ctx,
				int gidx, int timeout)
{
	struct ibv_pd *pd2 = ibv_alloc_pd(ctx);
	struct offer o = { 0 };
	int sv[2], status, ret, i;
	pid_t pid;
	char c;

	if (!pd2)
		tool_fail("alloc_pd: %s", strerror(errno));
	o.pd_handle = pd2->handle;
	pid = start_importer(self, "-k", sv, gidx, timeout);
	send_fd(sv[0], ctx->cmd_fd, &o, sizeof(o));
	tool_read_all(sv[0], &c, 1);
	ret = ibv_dealloc_pd(pd2);
	tool_check("dealloc_pd_while_imported_ebusy", ret == EBUSY, "ret %d",
		   ret);
	if (kill(pid, SIGKILL) || waitpid(pid, &status, 0) != pid)
		tool_fail("kill holder: %s", strerror(errno));
	close(sv[0]);
	for (i = 0; i < 10000; i++) {
		ret = ibv_dealloc_pd(pd2);
		if (ret != EBUSY)
			break;
		usleep(1000);
	}
	tool_check("dealloc_pd_after_holder_killed", ret == 0,
		   "ret %d after %d polls", ret, i);
}

static int exporter(const char *self, const char *dev, int gidx,
		    int timeout)
{
	struct offer o = { 0 };
	struct answer a;
	struct ibv_context *ctx = tool_open_device(dev);
	struct ibv_pd *pd = ibv_alloc_pd(ctx);
	struct ibv_cq *cq = ibv_create_cq(ctx, 8, NULL, NULL, 0);
	struct ibv_mr *mr, *spare;
	struct ibv_qp *qp, *qp2;
	union ibv_gid gid;
	struct stat sb;
	size_t bad = 0;
	uint8_t *buf;
	int sv[2], status;
	pid_t pid;
	char c;

	if (!pd || !cq || ibv_query_gid(ctx, 1, gidx, &gid))
		tool_fail("pd/cq/gid: %s", strerror(errno));
	tool_check("cmd_fd_is_a_memfd",
		   fstat(ctx->cmd_fd, &sb) == 0 && S_ISREG(sb.st_mode),
		   "cmd_fd %d", ctx->cmd_fd);
	buf = mmap(NULL, BUF_LEN, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (buf == MAP_FAILED)
		tool_fail("mmap: %s", strerror(errno));
	memset(buf, 0xa5, BUF_LEN);
	mr = ibv_reg_mr(pd, buf, BUF_LEN,
			IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	spare = ibv_reg_mr(pd, buf, 4096, IBV_ACCESS_LOCAL_WRITE);
	if (!mr || !spare)
		tool_fail("reg_mr: %s", strerror(errno));
	qp = tool_rc_qp(pd, cq);
	qp2 = tool_rc_qp(pd, cq);
	o.pd_handle = pd->handle;
	o.mr_handle = mr->handle;
	o.spare_mr_handle = spare->handle;
	o.qpn[0] = qp->qp_num;
	o.qpn[1] = qp2->qp_num;
	memcpy(o.gid, gid.raw, 16);
	o.addr = (uintptr_t)mr->addr;
	o.length = mr->length;
	o.lkey = mr->lkey;
	o.rkey = mr->rkey;
	if (ibv_dereg_mr(spare))
		tool_fail("dereg_mr spare");

	pid = start_importer(self, "-c", sv, gidx, timeout);
	send_fd(sv[0], ctx->cmd_fd, &o, sizeof(o));
	tool_read_all(sv[0], &a, sizeof(a));
	tool_rc_to_rts(qp, a.qpn[0], gid.raw, gidx);
	tool_rc_to_rts(qp2, a.qpn[1], gid.raw, gidx);
	tool_write_all(sv[0], "g", 1);
	tool_read_all(sv[0], &c, 1); /* the importer is done */
	if (waitpid(pid, &status, 0) != pid)
		tool_fail("waitpid: %s", strerror(errno));
	tool_check("importer_exited_0", WIFEXITED(status) &&
		   WEXITSTATUS(status) == 0, "status 0x%x", status);
	for (size_t i = 0; i < BUF_LEN; i++) {
		uint8_t want = 0xa5;

		if (i >= PAT_OFF && i < PAT_OFF + PAT_LEN)
			want = pattern(i - PAT_OFF);
		bad += buf[i] != want;
	}
	tool_check("write_landed", bad == 0,
		   "%zu of %d bytes wrong (pattern %d bytes at %d, crc 0x%08x)",
		   bad, BUF_LEN, PAT_LEN, PAT_OFF,
		   tool_crc32(buf + PAT_OFF, PAT_LEN));
	check_killed_holder(self, ctx, gidx, timeout);
	/* The importer's references are gone with it: everything goes. */
	if (ibv_destroy_qp(qp) || ibv_destroy_qp(qp2) || ibv_dereg_mr(mr))
		tool_fail("destroy qp/mr: %s", strerror(errno));
	if (ibv_destroy_cq(cq))
		tool_fail("destroy cq");
	status = ibv_dealloc_pd(pd);
	tool_check("dealloc_pd_after_importer", status == 0, "ret %d", status);
	ibv_close_device(ctx);
	close(sv[0]);
	printf("mrce_import: exporter OK\n");
	return 0;
}

int main(int argc, char **argv)
{
	const char *dev = "mrce0";
	int gidx = 0, timeout = 60, sock = -1, hold = -1, c;

	while ((c = getopt(argc, argv, "d:g:t:c:k:")) != -1) {
		switch (c) {
		case 'd': dev = optarg; break;
		case 'g': gidx = atoi(optarg); break;
		case 't': timeout = atoi(optarg); break;
		case 'c': sock = atoi(optarg); break; /* the importer */
		case 'k': hold = atoi(optarg); break;  /* the killed holder */
		default:
			fprintf(stderr, "usage: %s [-d DEV] [-g GIDX] [-t S]\n",
				argv[0]);
			return 2;
		}
	}
	tool_init("mrce_import", (unsigned int)timeout);
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (sock >= 0)
		return importer(sock, gidx);
	if (hold >= 0)
		return holder(hold);
	return exporter("/proc/self/exe", dev, gidx, timeout);
}
