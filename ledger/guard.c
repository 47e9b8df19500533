/*
 * Reading damaged storage without crashing (DESIGN 4.3: damaged LMDB pages
 * give exit 1, "damaged storage", never a signal).
 *
 * LMDB keeps no checksums and trusts its pages: a flipped bit in a page
 * header or a node's flags can send liblmdb itself through a NULL pointer
 * or past the end of the file, inside mdb_cursor_get, where no error code
 * can come back. So a handle opened with `forensic` (the read-only tools)
 * does three things, cheapest first:
 *
 *  1. Before LMDB maps the file, both meta pages are checked against the
 *     file (magic, page number, transaction parity, last page and roots
 *     inside the file), so that LMDB never maps or follows a page the file
 *     does not hold.
 *  2. Every key and value LMDB hands back is checked to lie inside the
 *     file before any byte of it is read (an integer key is 8 bytes), and
 *     the last page of the snapshot inside it too.
 *  3. Only where damage defeats both — a corrupted node that liblmdb
 *     follows on its own — a SIGSEGV/SIGBUS handler siglongjmps out of the
 *     LMDB call back into the guarded wrapper, which reports damaged
 *     storage and the page; liblmdb's own assertions on such a page (its
 *     mdb_env_set_assert callback) end the read the same way. This is the honest last resort the code of
 *     liblmdb leaves: the read is from a read-only map in a read
 *     transaction, which takes no lock and allocates nothing, so nothing
 *     is left half-done but the cursor, which is only freed afterwards.
 *
 * The jump buffer has to be reachable from the signal handler, so it is
 * the one mutable global of the ledger: thread-local, set only for the
 * duration of one guarded call, and the handler passes every fault it does
 * not own on to the previous handler (a real bug still crashes, with the
 * sanitizer's report when there is one).
 */
#include "ledger/store.h"

#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

static _Thread_local sigjmp_buf *fault_jump;
static _Thread_local const void *fault_addr;
static _Thread_local int fault_sig;

/* The handlers replaced, and how many forensic handles use ours. Handles
 * are opened and closed by one thread (the tools are single-threaded). */
static struct sigaction old_segv, old_bus;
static unsigned trap_users;

static void on_fault(int sig, siginfo_t *si, void *uc)
{
	const struct sigaction *old = sig == SIGBUS ? &old_bus : &old_segv;

	(void)uc;
	if (fault_jump != NULL) {
		sigjmp_buf *jb = fault_jump;

		fault_jump = NULL;
		fault_addr = si->si_addr;
		fault_sig = sig;
		siglongjmp(*jb, 1);
	}
	/* Not a read we guard: give the fault back to whoever had it, and
	 * return, so that the instruction faults again under that handler. */
	sigaction(sig, old, NULL);
}

void ledger__store_on_assert(MDB_env *env, const char *msg)
{
	(void)env;
	(void)msg;
	if (fault_jump != NULL) {
		sigjmp_buf *jb = fault_jump;

		fault_jump = NULL;
		fault_addr = NULL;
		fault_sig = SIGABRT;
		siglongjmp(*jb, 1);
	}
}

void ledger__store_trap_install(void)
{
	struct sigaction sa;

	if (trap_users++ > 0)
		return;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_fault;
	/* SA_NODEFER: the jump leaves the handler without returning, and
	 * sigsetjmp(jb, 0) restores no mask, so the signal must not stay
	 * blocked. */
	sa.sa_flags = SA_SIGINFO | SA_NODEFER;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGSEGV, &sa, &old_segv);
	sigaction(SIGBUS, &sa, &old_bus);
}

void ledger__store_trap_remove(void)
{
	if (trap_users == 0 || --trap_users > 0)
		return;
	sigaction(SIGSEGV, &old_segv, NULL);
	sigaction(SIGBUS, &old_bus, NULL);
}

/* ---------------------------------------------------------------------- */
/* Bounds of what a snapshot may reference */

/* The page of address a in the map, or (size_t)-1 outside it. */
static size_t page_of(const ledger_t *lg, const void *a)
{
	const char *p = a, *lo = lg->map_lo, *hi = lg->map_hi;

	return lo != NULL && p >= lo && p < hi ? (size_t)(p - lo) / lg->psize
					       : (size_t)-1;
}

/* The map of the file with inode ino: [*lo, *hi), false when not found.
 * LMDB does not say where it is (mdb_env_info's me_mapaddr is the meta's
 * fixed address, 0 for ours), so it is looked up in /proc/self/maps. */
static bool map_now(ino_t ino, uintptr_t *lo, uintptr_t *hi)
{
	FILE *f = fopen("/proc/self/maps", "re");
	char line[512];
	bool found = false;

	if (f == NULL)
		return false;
	while (!found && fgets(line, sizeof(line), f) != NULL) {
		unsigned long long a, b, off, inode;
		char perms[8];

		if (sscanf(line, "%llx-%llx %7s %llx %*s %llu", &a, &b, perms,
			   &off, &inode) == 5 &&
		    inode == (unsigned long long)ino && off == 0) {
			*lo = (uintptr_t)a;
			*hi = (uintptr_t)b;
			found = true;
		}
	}
	fclose(f);
	return found;
}

/* Where that map starts; NULL when not found. */
static const void *map_start(ino_t ino)
{
	uintptr_t lo, hi;

	return map_now(ino, &lo, &hi) ? (const void *)lo : NULL;
}

void ledger__store_map_trim(ledger_t *lg)
{
	mdb_filehandle_t fd;
	struct stat sb;
	uintptr_t lo, hi, page = (uintptr_t)sysconf(_SC_PAGESIZE);

	/* The map holds still while the handle that remaps it (the parent)
	 * is here, or while a snapshot holds the remap lock; it is looked
	 * up afresh each time, as a remembered address could name memory the
	 * map has left. */
	if (lg->o.map_trim_bytes == SIZE_MAX ||
	    (lg->parent != NULL && !lg->locked) ||
	    mdb_env_get_fd(lg->env, &fd) != 0 || fstat(fd, &sb) != 0 ||
	    !map_now(sb.st_ino, &lo, &hi))
		return;
	if ((uintptr_t)sb.st_size < hi - lo)
		hi = lo + (((uintptr_t)sb.st_size + page - 1) & ~(page - 1));
	(void)madvise((void *)lo, hi - lo, MADV_DONTNEED);
}

void ledger__store_map_grown(ledger_t *lg)
{
	MDB_envinfo info;
	MDB_stat st;

	if (lg->o.map_trim_bytes == SIZE_MAX ||
	    mdb_env_info(lg->env, &info) != 0 ||
	    mdb_env_stat(lg->env, &st) != 0)
		return;
	if (info.me_last_pgno >= lg->trim_pgno &&
	    (info.me_last_pgno - lg->trim_pgno) * (size_t)st.ms_psize <
		    lg->o.map_trim_bytes)
		return;
	lg->trim_pgno = info.me_last_pgno;
	ledger__store_map_trim(lg);
}

void ledger__store_reading_end(struct store_reading *r, size_t after)
{
	if (r->read >= after)
		ledger__store_map_trim(r->lg);
}

int ledger__store_bounds_load(ledger_t *lg)
{
	MDB_envinfo info;
	MDB_stat st;
	struct stat sb;
	mdb_filehandle_t fd;
	size_t file;

	if (!lg->o.forensic)
		return 0;
	if (mdb_env_info(lg->env, &info) != 0 ||
	    mdb_env_stat(lg->env, &st) != 0 ||
	    mdb_env_get_fd(lg->env, &fd) != 0 || fstat(fd, &sb) != 0)
		return EIO;
	file = (size_t)sb.st_size;
	lg->psize = st.ms_psize;
	/* The map moves only when its size changes: look it up again then. */
	if (lg->map_lo == NULL || info.me_mapsize != lg->map_bytes) {
		lg->map_lo = map_start(sb.st_ino);
		lg->map_bytes = info.me_mapsize;
	}
	lg->map_hi = lg->map_lo == NULL ? NULL
					: (const char *)lg->map_lo +
						  (file < info.me_mapsize
							   ? file
							   : info.me_mapsize);
	/* The newest meta's last page must be inside the file, or LMDB may
	 * map pages the file does not hold. (Without /proc, map_lo is NULL
	 * and values go unchecked; the fault guard still holds.) */
	if ((info.me_last_pgno + 1) * (size_t)st.ms_psize > file) {
		lg->bad_page = info.me_last_pgno;
		lg->bad_what = "the last page is beyond the file";
		return STORE_EBOUNDS;
	}
	return 0;
}

static int in_file(const ledger_t *lg, const MDB_val *v)
{
	const char *p = v->mv_data, *lo = lg->map_lo, *hi = lg->map_hi;

	return lo == NULL ||
	       (p >= lo && p < hi && v->mv_size <= (size_t)(hi - p));
}

/* A key and value LMDB returned: inside the file, and an integer key of
 * the integer-keyed databases 8 bytes long. key may be NULL (mdb_get). */
static int check_val(ledger_t *lg, enum ledger_db db, const MDB_val *key,
		     const MDB_val *val)
{
	if (key != NULL && !in_file(lg, key)) {
		lg->bad_page = page_of(lg, key->mv_data);
		lg->bad_what = "a key beyond the file";
		return STORE_EBOUNDS;
	}
	if (key != NULL && db != LEDGER_DB_META &&
	    key->mv_size != sizeof(uint64_t)) {
		lg->bad_page = page_of(lg, key->mv_data);
		lg->bad_what = "a key that is not a seq";
		return STORE_EBOUNDS;
	}
	if (!in_file(lg, val)) {
		lg->bad_page = page_of(lg, val->mv_data);
		lg->bad_what = "a record beyond the file";
		return STORE_EBOUNDS;
	}
	return 0;
}

/* ---------------------------------------------------------------------- */
/* Guarded reads */

static void note_fault(ledger_t *lg)
{
	lg->bad_page = page_of(lg, fault_addr);
	lg->bad_what = fault_sig == SIGBUS    ? "SIGBUS inside LMDB"
		       : fault_sig == SIGABRT ? "an assertion of LMDB's"
					      : "SIGSEGV inside LMDB";
}

/* rc = call, with a fault inside it turned into STORE_EFAULT. The jump
 * lands in the frame of the function that expands this, which is still
 * live; rc is assigned after the jump, never kept across it. */
#define GUARDED(lg, rc, call)                 \
	do {                                  \
		sigjmp_buf jb_;               \
		if (sigsetjmp(jb_, 0) != 0) { \
			note_fault(lg);       \
			(rc) = STORE_EFAULT;  \
		} else {                      \
			fault_jump = &jb_;    \
			(rc) = (call);        \
			fault_jump = NULL;    \
		}                             \
	} while (0)

int ledger__store_get(ledger_t *lg, MDB_txn *txn, enum ledger_db db,
		      MDB_val *key, MDB_val *val)
{
	int rc;

	if (db == LEDGER_DB_EVENTS)
		lg->records_read++;
	if (!lg->o.forensic)
		return mdb_get(txn, lg->dbi[db], key, val);
	GUARDED(lg, rc, mdb_get(txn, lg->dbi[db], key, val));
	return rc == 0 ? check_val(lg, db, NULL, val) : rc;
}

int ledger__store_cursor_get(ledger_t *lg, MDB_cursor *cur, enum ledger_db db,
			     MDB_val *key, MDB_val *val, MDB_cursor_op op)
{
	int rc;

	if (db == LEDGER_DB_EVENTS)
		lg->records_read++;
	if (!lg->o.forensic)
		return mdb_cursor_get(cur, key, val, op);
	GUARDED(lg, rc, mdb_cursor_get(cur, key, val, op));
	return rc == 0 ? check_val(lg, db, key, val) : rc;
}

int ledger__store_dbi_open(ledger_t *lg, MDB_txn *txn, enum ledger_db db,
			   unsigned flags)
{
	int rc;

	if (!lg->o.forensic)
		return mdb_dbi_open(txn, ledger__store_db_names[db], flags,
				    &lg->dbi[db]);
	GUARDED(lg, rc,
		mdb_dbi_open(txn, ledger__store_db_names[db], flags,
			     &lg->dbi[db]));
	return rc;
}

/* The detail of a damaged-storage code, for ledger__store_error. */
int ledger__store_damage_detail(const ledger_t *lg, int rc, char *buf,
				size_t cap)
{
	if (rc != STORE_EFAULT && rc != STORE_EBOUNDS)
		return 0;
	if (lg->bad_page != (size_t)-1)
		snprintf(buf, cap, "%s (page %zu)", lg->bad_what, lg->bad_page);
	else
		snprintf(buf, cap, "%s", lg->bad_what);
	return 1;
}

/* ---------------------------------------------------------------------- */
/* Meta pages, checked before LMDB maps the file. The layout is LMDB's data
 * format version 1 (mdb.c: MDB_page, MDB_meta, MDB_db), little endian on
 * the platforms we build for:
 *   page header 16 bytes: pgno u64, pad u16, flags u16, lower/upper u16;
 *   meta at 16: magic u32, version u32, address u64, mapsize u64,
 *   dbs[FREE] at 40 and dbs[MAIN] at 88 (48 bytes each: pad u32 (the page
 *   size, for FREE), flags u16, depth u16, branch, leaf, overflow pages,
 *   entries, root: u64 each), last page u64 at 136, txnid u64 at 144. */

#define MDB_META_MAGIC 0xBEEFC0DEu
#define MDB_P_META     0x08
#define MDB_P_INVALID  (~(uint64_t)0)

struct meta {
	uint64_t pgno, mapsize, last, txnid, roots[2];
	uint32_t magic, version, psize;
	uint16_t flags;
};

static uint64_t le(const uint8_t *p, int n)
{
	uint64_t v = 0;

	for (int i = n - 1; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

static void meta_parse(const uint8_t *p, struct meta *m)
{
	m->pgno = le(p, 8);
	m->flags = (uint16_t)le(p + 10, 2);
	m->magic = (uint32_t)le(p + 16, 4);
	m->version = (uint32_t)le(p + 20, 4);
	m->mapsize = le(p + 32, 8);
	m->psize = (uint32_t)le(p + 40, 4);
	m->roots[0] = le(p + 40 + 40, 8);
	m->roots[1] = le(p + 88 + 40, 8);
	m->last = le(p + 136, 8);
	m->txnid = le(p + 144, 8);
}

/* Why meta page i (of a file of `pages` pages) is unusable, or NULL. */
static const char *meta_fault(const struct meta *m, unsigned i, uint64_t pages)
{
	if (m->magic != MDB_META_MAGIC || m->version != 1)
		return "not an LMDB meta page";
	if (m->pgno != i || !(m->flags & MDB_P_META))
		return "bad page header";
	if (m->psize < 512 || m->psize > 65536 || (m->psize & (m->psize - 1)))
		return "bad page size";
	if (m->txnid % 2 != i && m->txnid != 0)
		return "transaction id of the other meta page";
	if (m->last >= pages)
		return "last page beyond the file";
	/* LMDB would map it: more than any machine's address space. */
	if (m->mapsize > ((uint64_t)1 << 46))
		return "map size beyond any address space";
	for (int d = 0; d < 2; d++)
		if (m->roots[d] != MDB_P_INVALID &&
		    (m->roots[d] < 2 || m->roots[d] > m->last))
			return "root page beyond its last page";
	return NULL;
}

/* Why the meta pages of the open file fd are unusable (NULL: they are
 * fine); *bad is the page. Read before the file's size, which only grows
 * while a writer commits, so a page a meta names is never found missing. */
static const char *metas_fault(int fd, unsigned *bad)
{
	uint8_t p[2][160];
	struct meta m[2];
	struct stat sb;
	uint64_t pages;
	const char *why = NULL;

	*bad = 0;
	if (pread(fd, p[0], sizeof(p[0]), 0) != sizeof(p[0]))
		return "too short for LMDB";
	meta_parse(p[0], &m[0]);
	memset(&m[1], 0, sizeof(m[1]));
	if (m[0].psize >= 512 && m[0].psize <= 65536 &&
	    pread(fd, p[1], sizeof(p[1]), m[0].psize) == sizeof(p[1]))
		meta_parse(p[1], &m[1]);
	if (fstat(fd, &sb) != 0)
		return "cannot be read";
	pages = m[0].psize ? (uint64_t)sb.st_size / m[0].psize : 0;
	for (unsigned i = 0; i < 2 && why == NULL; i++)
		if ((why = meta_fault(&m[i], i, pages)) != NULL)
			*bad = i;
	if (why == NULL && m[1].psize != m[0].psize)
		why = "bad page size", *bad = 1;
	/* Each commit writes the meta page of its parity with the next
	 * transaction id: the two are one apart (or both 0, fresh). */
	if (why == NULL && m[0].txnid + 1 != m[1].txnid &&
	    m[1].txnid + 1 != m[0].txnid && (m[0].txnid | m[1].txnid) != 0)
		why = "transaction ids not consecutive",
		*bad = m[0].txnid > m[1].txnid ? 0 : 1;
	return why;
}

int ledger__store_meta_check(ledger_t *lg, struct lg_error *err)
{
	char path[4096];
	const char *why = NULL;
	unsigned bad = 0;
	struct stat sb;
	int fd;

	snprintf(path, sizeof(path), "%s/data.mdb", lg->dir);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? 0 /* LMDB says so */
				       : lg_error_set(err, LG_EIO, "%s: %s",
						      path, strerror(errno));
	/* An empty file is a writer killed before its first commit, as an
	 * absent one: nothing was ever stored, so it is no ledger, not damage
	 * (the same answer as a normal read-only open gives). */
	if (fstat(fd, &sb) == 0 && sb.st_size == 0) {
		close(fd);
		return lg_error_set(err, LG_ENOENT,
				    "%s: not a gpuledger database (data.mdb "
				    "has no meta pages yet)",
				    lg->dir);
	}
	/* A writer may commit between the two reads of a check: only a
	 * fault that stays is damage. */
	for (int i = 0; i < 3; i++)
		if ((why = metas_fault(fd, &bad)) == NULL)
			break;
	close(fd);
	if (why != NULL)
		return lg_error_set(err, LG_ECORRUPT,
				    "damaged storage: meta page %u: %s", bad,
				    why);
	return 0;
}
