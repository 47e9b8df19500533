/*
 * Transparency on the command line (DESIGN 4.4): keygen, head, prove,
 * check-proof, and the signing and checkpoint checks that checkpoint and
 * verify share. Notes and proofs use the C2SP formats, so other tools can
 * check what these print.
 */
#include "tools/tools.h"
#include "ingest/ingest.h"
#include "query/query.h"

#include <errno.h>
#include <fcntl.h>
#include <openssl/rand.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Longest key, note or proof file read. */
#define TLOG_FILE_MAX (1u << 20)

static char *read_text(const char *cmd, const char *path, FILE *f_in)
{
	FILE *f = f_in ? f_in : fopen(path, "r");
	char *buf;
	size_t n;

	if (f == NULL) {
		tool_error("%s: %s: %s", cmd, path, strerror(errno));
		return NULL;
	}
	buf = lg_xmalloc(TLOG_FILE_MAX + 1);
	n = fread(buf, 1, TLOG_FILE_MAX + 1, f);
	if (f_in == NULL)
		fclose(f);
	if (n > TLOG_FILE_MAX) {
		tool_error("%s: %s: larger than %u bytes", cmd, path,
			   TLOG_FILE_MAX);
		free(buf);
		return NULL;
	}
	buf[n] = '\0';
	return buf;
}

/* Reads a key file and parses it with parse (note_signer_parse or
 * note_verifier_parse); prints the error; 0 or EXIT_USAGE. */
static int load_key(const char *cmd, const char *path,
		    int (*parse)(void *, const char *, struct lg_error *),
		    void *key)
{
	struct lg_error err = {0};
	char *t = read_text(cmd, path, NULL);
	int rc = t ? parse(key, t, &err) : LG_EIO;

	if (t != NULL && rc != 0)
		tool_error("%s: %s: %s", cmd, path, err.msg);
	free(t);
	return rc ? EXIT_USAGE : 0;
}

static int parse_signer(void *k, const char *t, struct lg_error *err)
{
	return note_signer_parse(k, t, err);
}

static int parse_verifier(void *k, const char *t, struct lg_error *err)
{
	return note_verifier_parse(k, t, err);
}

int tlog_load_signer(const char *cmd, const char *path, struct note_signer *s)
{
	return load_key(cmd, path, parse_signer, s);
}

static int load_verifier(const char *cmd, const char *path,
			 struct note_verifier *v)
{
	return load_key(cmd, path, parse_verifier, v);
}

/* Opens a signed checkpoint with key v: its size and root. Prints why not
 * (prefix "invalid: ") and returns EXIT_NEGATIVE. */
static int open_checkpoint(const char *note, const struct note_verifier *v,
			   uint64_t *size, uint8_t *root, const char *what)
{
	struct lg_error err = {0};
	char origin[NOTE_NAME_MAX + 1];
	size_t tl;

	if (note_open(note, strlen(note), v, 1, &tl, &err) != 0 ||
	    tlog_checkpoint_parse(note, tl, origin, size, root, &err) != 0) {
		printf("invalid: %s: %s\n", what, err.msg);
		return EXIT_NEGATIVE;
	}
	if (strcmp(origin, v->name) != 0) {
		printf("invalid: %s: origin \"%s\" is not the key's name\n",
		       what, origin);
		return EXIT_NEGATIVE;
	}
	return 0;
}

/* ---------------------------------------------------------------------- */
/* keygen */

static const char keygen_usage[] =
	"usage: gpuledger keygen --name NAME --out DIR\n"
	"  makes an Ed25519 key for signed checkpoints. NAME is the log's\n"
	"  origin (e.g. gpuledger.example/prod-ledger). Writes DIR/NAME.key\n"
	"  (the signer key, mode 0600, for --sign-key) and DIR/NAME.pub (the\n"
	"  verifier key, for auditors and witnesses), '/' in NAME as '_', and\n"
	"  prints the verifier key.\n";

static int write_file(const char *path, const char *text, mode_t mode)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL, mode);
	size_t n = strlen(text);
	bool ok = fd >= 0 && write(fd, text, n) == (ssize_t)n &&
		  write(fd, "\n", 1) == 1;

	if (fd >= 0 && close(fd) != 0)
		ok = false;
	if (!ok)
		tool_error("keygen: %s: %s", path, strerror(errno));
	return ok ? 0 : EXIT_USAGE;
}

int cmd_keygen(int argc, char **argv)
{
	const char *name = NULL, *out = NULL;
	const struct opt opts[] = {
		{"--name", OPT_STR, &name, "NAME",
		 "the log's origin, the first line of its checkpoints"},
		{"--out", OPT_STR, &out, "DIR",
		 "the directory of the two key files"},
	};
	const struct cmd_spec spec =
		CMD_SPEC("keygen", keygen_usage, opts, NULL);
	struct lg_error err = {0};
	struct note_signer s;
	uint8_t seed[NOTE_KEY_BYTES];
	char vk[NOTE_KEY_TEXT_MAX], sk[NOTE_KEY_TEXT_MAX], base[NOTE_NAME_MAX + 1];
	char path[4096];
	int status = opts_parse(&spec, argc, argv);

	if (status != OPTS_RUN)
		return opts_exit(status);
	if (name == NULL || out == NULL) {
		tool_error("keygen: --name and --out are required");
		return EXIT_USAGE;
	}
	if (RAND_bytes(seed, sizeof(seed)) != 1) {
		tool_error("keygen: no randomness");
		return EXIT_USAGE;
	}
	if (note_signer_from_seed(&s, name, seed, &err) != 0) {
		tool_error("keygen: %s", err.msg);
		return EXIT_USAGE;
	}
	note_verifier_format(&s, vk);
	note_signer_format(&s, sk);
	snprintf(base, sizeof(base), "%s", name);
	for (char *p = base; *p; p++)
		if (*p == '/')
			*p = '_';
	if (mkdir(out, 0700) != 0 && errno != EEXIST) {
		tool_error("keygen: %s: %s", out, strerror(errno));
		return EXIT_USAGE;
	}
	snprintf(path, sizeof(path), "%s/%s.key", out, base);
	if ((status = write_file(path, sk, 0600)) != 0)
		return status;
	snprintf(path, sizeof(path), "%s/%s.pub", out, base);
	if ((status = write_file(path, vk, 0644)) != 0)
		return status;
	return tool_flush("keygen", tool_puts(vk));
}

/* ---------------------------------------------------------------------- */
/* head */

static const char head_usage[] =
	"usage: gpuledger head --db DIR [--size N]\n"
	"  prints the latest signed checkpoint (a C2SP signed note), or the\n"
	"  one of tree size N. Exits 1 when there is none.\n";

int cmd_head(int argc, char **argv)
{
	const char *db = NULL;
	uint64_t size = 0;
	const struct opt opts[] = {
		OPT_DB(&db),
		{"--size", OPT_U64, &size, "N",
		 "the checkpoint of tree size N (default: the latest)"},
	};
	const struct cmd_spec spec = CMD_SPEC("head", head_usage, opts, NULL);
	struct lg_error err = {0};
	ledger_t *lg;
	char *note;
	int status = opts_parse(&spec, argc, argv), rc;

	if (status != OPTS_RUN)
		return opts_exit(status);
	if ((status = tool_open_ledger("head", db, NULL, &lg)) != 0)
		return status;
	rc = ledger_note_get(lg, size, &note, NULL, &err);
	ledger_close(lg);
	if (rc != 0) {
		tool_error("head: %s", err.msg);
		return rc == LG_ENOENT ? EXIT_NEGATIVE : EXIT_USAGE;
	}
	fputs(note, stdout);
	free(note);
	return tool_flush("head", 0);
}

/* ---------------------------------------------------------------------- */
/* prove */

static const char prove_usage[] =
	"usage: gpuledger prove --db DIR --seq N [--size M] [--format json|c2sp]\n"
	"       gpuledger prove --db DIR --from M --to N\n"
	"  an inclusion proof of seq N in the tree of size M (default: the\n"
	"  latest signed checkpoint's size, else the last seq), or a\n"
	"  consistency proof from size M to size N (RFC 9162 2.1.3, 2.1.4), as\n"
	"  JSON with the event and the signed checkpoints of those sizes when\n"
	"  they exist; --format c2sp prints an inclusion proof as C2SP\n"
	"  tlog-proof@v1 (needs a signed checkpoint of size M), the event's\n"
	"  log line as its extra data.\n";

/* C2SP tlog-proof@v1: the header line, the leaf index, the hashes one a
 * line, a blank line, the signed checkpoint. */
static int print_c2sp(const json_t *proof)
{
	const json_t *h = json_object_get(proof, "hashes"), *v;
	const char *cp = json_string_value(json_object_get(proof, "checkpoint"));
	char *ev;
	size_t i;

	if (cp == NULL) {
		tool_error("prove: no signed checkpoint of that size (sign one "
			   "with `gpuledger checkpoint --sign-key`)");
		return EXIT_USAGE;
	}
	/* extra: the entry itself (line `seq` of `gpuledger log`), so that
	 * the proof is self-contained. */
	ev = jcs_text(json_object_get(proof, "event"), JCS_INT_STRINGS,
		      SIZE_MAX, NULL);
	if (ev != NULL) {
		char *b64 = lg_xmalloc(4 * (strlen(ev) / 3 + 1) + 1);

		note_b64_encode((const uint8_t *)ev, strlen(ev), b64);
		printf("c2sp.org/tlog-proof@v1\nextra %s\n", b64);
		free(b64);
		free(ev);
	} else {
		printf("c2sp.org/tlog-proof@v1\n");
	}
	printf("index %lld\n",
	       (long long)json_integer_value(json_object_get(proof, "seq")) - 1);
	json_array_foreach (h, i, v)
		printf("%s\n", json_string_value(v));
	printf("\n%s", cp);
	return tool_flush("prove", 0);
}

int cmd_prove(int argc, char **argv)
{
	const char *db = NULL, *format = "json";
	uint64_t seq = 0, size = 0, from = 0, to = 0;
	const struct opt opts[] = {
		OPT_DB(&db),
		{"--seq", OPT_U64, &seq, "N", "the event to prove included"},
		{"--size", OPT_U64, &size, "M", "in the tree of size M"},
		{"--from", OPT_U64, &from, "M",
		 "a consistency proof from the tree of size M"},
		{"--to", OPT_U64, &to, "N", "to the tree of size N"},
		{"--format", OPT_STR, &format, "json|c2sp",
		 "json (default) or c2sp (an inclusion proof only)"},
	};
	const struct cmd_spec spec = CMD_SPEC("prove", prove_usage, opts, NULL);
	struct lg_error err = {0};
	ledger_t *lg;
	json_t *proof;
	char *text;
	int status = opts_parse(&spec, argc, argv);

	if (status != OPTS_RUN)
		return opts_exit(status);
	if ((seq == 0) == (from == 0 && to == 0) ||
	    (strcmp(format, "json") && strcmp(format, "c2sp"))) {
		tool_error("prove: give --seq N, or --from M --to N; --format "
			   "json|c2sp");
		return EXIT_USAGE;
	}
	if ((status = tool_open_ledger("prove", db, NULL, &lg)) != 0)
		return status;
	if (seq != 0 && size == 0)
		size = query_proof_size(lg, seq);
	if (seq == 0 && to == 0)
		to = ledger_last_seq(lg);
	proof = seq ? query_proof_inclusion(lg, seq, size, &err)
		    : query_proof_consistency(lg, from, to, &err);
	ledger_close(lg);
	if (proof == NULL) {
		tool_error("prove: %s", err.msg[0] ? err.msg : "failed");
		return EXIT_USAGE;
	}
	if (strcmp(format, "c2sp") == 0 && seq != 0) {
		status = print_c2sp(proof);
	} else {
		text = json_canonical(proof);
		status = tool_flush("prove", tool_puts(text));
		free(text);
	}
	json_decref(proof);
	return status;
}

/* ---------------------------------------------------------------------- */
/* check-proof */

static const char check_proof_usage[] =
	"usage: gpuledger check-proof --key VERIFIER_KEY_FILE [--checkpoint "
	"FILE]\n"
	"         [--old-checkpoint FILE] < proof.json\n"
	"  checks a proof from `gpuledger prove` offline, with no ledger: the\n"
	"  checkpoint (FILE, else the proof's own) must be signed by the key\n"
	"  and be of the proof's tree size; an inclusion proof must give its\n"
	"  root from the event's leaf, a consistency proof must link the old\n"
	"  checkpoint (FILE, else the proof's) to it. Prints \"ok: ...\" and\n"
	"  exits 0, or \"invalid: REASON\" and exits 1.\n";

static int proof_hashes(const json_t *a, struct merkle_proof *p)
{
	size_t i, n;
	const json_t *v;

	if (!json_is_array(a) || json_array_size(a) > MERKLE_PROOF_MAX)
		return -1;
	p->n = 0;
	json_array_foreach (a, i, v) {
		const char *s = json_string_value(v);

		if (s == NULL ||
		    note_b64_decode(s, strlen(s), p->hash[p->n],
				    MERKLE_HASH_BYTES, &n) != 0 ||
		    n != MERKLE_HASH_BYTES)
			return -1;
		p->n++;
	}
	return 0;
}

/* The note text: from the file when given, else the proof's member. */
static char *note_from(const char *file, const json_t *proof, const char *k)
{
	const char *s = json_string_value(json_object_get(proof, k));

	if (file != NULL)
		return read_text("check-proof", file, NULL);
	return s ? lg_xstrdup(s) : NULL;
}

static int check_inclusion(const json_t *pr, const struct merkle_proof *p,
			   uint64_t size, const uint8_t *root)
{
	const json_t *ev = json_object_get(pr, "event");
	uint64_t seq = (uint64_t)json_integer_value(json_object_get(pr, "seq"));
	uint8_t leaf[MERKLE_HASH_BYTES];
	char *text;
	int rc;

	if (!json_is_object(ev) ||
	    json_integer_value(json_object_get(ev, "seq")) != (json_int_t)seq ||
	    seq == 0) {
		printf("invalid: the event is missing or not seq %llu\n",
		       (unsigned long long)seq);
		return EXIT_NEGATIVE;
	}
	text = jcs_text(ev, JCS_INT_STRINGS, SIZE_MAX, NULL);
	merkle_leaf_hash(text, strlen(text), leaf);
	free(text);
	rc = merkle_verify_inclusion(seq - 1, size, leaf, p, root);
	if (rc != 0) {
		printf("invalid: the inclusion proof of seq %llu does not give "
		       "the root of the checkpoint of size %llu\n",
		       (unsigned long long)seq, (unsigned long long)size);
		return EXIT_NEGATIVE;
	}
	printf("ok: seq %llu is in the tree of size %llu\n",
	       (unsigned long long)seq, (unsigned long long)size);
	return EXIT_OK;
}

int cmd_check_proof(int argc, char **argv)
{
	const char *key = NULL, *cpf = NULL, *oldf = NULL;
	const struct opt opts[] = {
		{"--key", OPT_STR, &key, "FILE",
		 "the verifier key of the checkpoints' signer"},
		{"--checkpoint", OPT_STR, &cpf, "FILE",
		 "the signed checkpoint the proof leads to (default: the "
		 "proof's own)"},
		{"--old-checkpoint", OPT_STR, &oldf, "FILE",
		 "the older checkpoint of a consistency proof (default: the "
		 "proof's own)"},
	};
	const struct cmd_spec spec =
		CMD_SPEC("check-proof", check_proof_usage, opts, NULL);
	struct note_verifier v;
	struct merkle_proof *p = NULL;
	json_t *pr = NULL;
	char *in = NULL, *cp = NULL, *old = NULL;
	uint8_t root[MERKLE_HASH_BYTES], root1[MERKLE_HASH_BYTES];
	uint64_t size, size1, tsize;
	const char *type;
	int status = opts_parse(&spec, argc, argv);

	if (status != OPTS_RUN)
		return opts_exit(status);
	if (key == NULL) {
		tool_error("check-proof: --key VERIFIER_KEY_FILE is required");
		return EXIT_USAGE;
	}
	if ((status = load_verifier("check-proof", key, &v)) != 0)
		return status;
	if ((in = read_text("check-proof", "stdin", stdin)) == NULL)
		return EXIT_USAGE;
	status = EXIT_NEGATIVE;
	pr = json_loads(in, 0, NULL);
	p = lg_xmalloc(sizeof(*p));
	type = json_string_value(json_object_get(pr, "type"));
	tsize = (uint64_t)json_integer_value(json_object_get(pr, "treeSize"));
	if (pr == NULL || type == NULL ||
	    proof_hashes(json_object_get(pr, "hashes"), p) != 0) {
		printf("invalid: not a proof (JSON with type, treeSize, "
		       "hashes)\n");
		goto out;
	}
	if ((cp = note_from(cpf, pr, "checkpoint")) == NULL) {
		printf("invalid: no signed checkpoint (the tree size must "
		       "come from one)\n");
		goto out;
	}
	if ((status = open_checkpoint(cp, &v, &size, root, "checkpoint")) != 0)
		goto out;
	status = EXIT_NEGATIVE;
	if (size != tsize) {
		printf("invalid: the checkpoint is of size %llu, the proof of "
		       "%llu\n",
		       (unsigned long long)size, (unsigned long long)tsize);
		goto out;
	}
	if (strcmp(type, "inclusion") == 0) {
		status = check_inclusion(pr, p, size, root);
		goto out;
	}
	if (strcmp(type, "consistency") != 0) {
		printf("invalid: unknown proof type \"%s\"\n", type);
		goto out;
	}
	if ((old = note_from(oldf, pr, "oldCheckpoint")) == NULL) {
		printf("invalid: no old checkpoint\n");
		goto out;
	}
	if ((status = open_checkpoint(old, &v, &size1, root1,
				      "old checkpoint")) != 0)
		goto out;
	status = EXIT_NEGATIVE;
	if ((json_int_t)size1 != json_integer_value(json_object_get(pr, "from")))
		printf("invalid: the old checkpoint is not of size from\n");
	else if (merkle_verify_consistency(size1, size, root1, root, p) != 0)
		printf("invalid: the tree of size %llu does not extend the one "
		       "of size %llu\n",
		       (unsigned long long)size, (unsigned long long)size1);
	else
		status = (printf("ok: the tree of size %llu extends the one of "
				 "size %llu\n",
				 (unsigned long long)size,
				 (unsigned long long)size1),
			  EXIT_OK);
out:
	fflush(stdout);
	json_decref(pr);
	free(p);
	free(in);
	free(cp);
	free(old);
	return status;
}

/* ---------------------------------------------------------------------- */
/* verify --checkpoint */

int tlog_verify_checkpoint(ledger_t *lg, uint64_t last, const char *file,
			   const char *key)
{
	struct note_verifier v;
	struct lg_error err = {0};
	uint8_t root[MERKLE_HASH_BYTES], mine[MERKLE_HASH_BYTES];
	uint64_t size;
	char *note;
	int status;

	if (key == NULL) {
		tool_error("verify: --checkpoint needs --key VERIFIER_KEY_FILE");
		return EXIT_USAGE;
	}
	if ((status = load_verifier("verify", key, &v)) != 0)
		return status;
	if ((note = read_text("verify", file, NULL)) == NULL)
		return EXIT_USAGE;
	status = open_checkpoint(note, &v, &size, root, file);
	free(note);
	if (status != 0)
		return status;
	if (size > last) {
		printf("corrupt: the log departs from the signed checkpoint at "
		       "size %llu: it holds %llu events (a cut tail)\n",
		       (unsigned long long)size, (unsigned long long)last);
		return EXIT_NEGATIVE;
	}
	if (ledger_tree_root(lg, size, mine, &err) != 0) {
		tool_error("verify: %s", err.msg);
		return EXIT_USAGE;
	}
	if (memcmp(root, mine, MERKLE_HASH_BYTES) != 0) {
		printf("corrupt: the log departs from the signed checkpoint at "
		       "size %llu: its tree of that size has another root (a "
		       "rewritten log)\n",
		       (unsigned long long)size);
		return EXIT_NEGATIVE;
	}
	return EXIT_OK;
}

/* ---------------------------------------------------------------------- */
/* witness */

static const char witness_usage[] =
	"usage: gpuledger witness --server URL --key VERIFIER_KEY_FILE --state DIR\n"
	"         [--token-file FILE] [--follow SECS] [--count N]\n"
	"  follows a server's signed checkpoints (GET URL/v1/checkpoint): checks\n"
	"  each new one's signature and a consistency proof from the last one\n"
	"  it kept (DIR/checkpoint), then keeps the new one. Exits 1 and says\n"
	"  why on a split view (same size, another root), a shrinking tree or a\n"
	"  proof that does not verify. Without --follow it looks once; with it,\n"
	"  every SECS seconds (--count N looks: stop after N).\n";

#define WITNESS_NOTE_MAX (64u << 10)
#define WITNESS_PROOF_MAX (1u << 20)
#define WITNESS_TIMEOUT_MS 10000

struct witness {
	const char *url, *state;
	char token[512];
	bool have_token;
	struct note_verifier v;
};

static int fetch(const struct witness *w, const char *path, size_t max,
		 char **body)
{
	struct lg_error err = {0};
	char url[4096];
	long status = 0;

	snprintf(url, sizeof(url), "%s%s", w->url, path);
	if (ingest_http_get(url, w->have_token ? w->token : NULL, max,
			    WITNESS_TIMEOUT_MS, body, &status, &err) != 0) {
		tool_error("witness: %s", err.msg);
		return EXIT_USAGE;
	}
	if (status != 200) {
		tool_error("witness: %s: HTTP %ld: %.200s", url, status, *body);
		free(*body);
		*body = NULL;
		return EXIT_USAGE;
	}
	return 0;
}

static int keep(const struct witness *w, const char *note)
{
	char path[4096], tmp[4200];
	FILE *f;

	snprintf(path, sizeof(path), "%s/checkpoint", w->state);
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	f = fopen(tmp, "w");
	if (f == NULL || fputs(note, f) == EOF || fflush(f) != 0 ||
	    fsync(fileno(f)) != 0 || fclose(f) != 0 || rename(tmp, path) != 0) {
		tool_error("witness: %s: %s", path, strerror(errno));
		return EXIT_USAGE;
	}
	return 0;
}

/* One look: 0 when the server's head extends what was kept. */
static int witness_once(const struct witness *w)
{
	char path[4096], *now = NULL, *old = NULL, *pj = NULL, q[96];
	uint8_t r_new[MERKLE_HASH_BYTES], r_old[MERKLE_HASH_BYTES];
	uint64_t n_new, n_old;
	struct merkle_proof *p = NULL;
	json_t *proof = NULL;
	FILE *f;
	int status;

	if ((status = fetch(w, "/v1/checkpoint", WITNESS_NOTE_MAX, &now)) != 0)
		return status;
	if ((status = open_checkpoint(now, &w->v, &n_new, r_new,
				      "the server's checkpoint")) != 0)
		goto out;
	snprintf(path, sizeof(path), "%s/checkpoint", w->state);
	if ((f = fopen(path, "r")) == NULL) {
		status = keep(w, now);
		if (status == 0)
			printf("ok: first checkpoint, tree size %llu\n",
			       (unsigned long long)n_new);
		goto out;
	}
	fclose(f);
	if ((old = read_text("witness", path, NULL)) == NULL) {
		status = EXIT_USAGE;
		goto out;
	}
	if ((status = open_checkpoint(old, &w->v, &n_old, r_old,
				      "the kept checkpoint")) != 0)
		goto out;
	status = EXIT_NEGATIVE;
	if (n_new < n_old) {
		printf("corrupt: the tree shrank from size %llu to %llu\n",
		       (unsigned long long)n_old, (unsigned long long)n_new);
		goto out;
	}
	if (n_new == n_old) {
		if (memcmp(r_new, r_old, MERKLE_HASH_BYTES) != 0)
			printf("corrupt: split view: two roots for tree size "
			       "%llu\n",
			       (unsigned long long)n_new);
		else
			status = (printf("ok: tree size %llu, unchanged\n",
					 (unsigned long long)n_new),
				  EXIT_OK);
		goto out;
	}
	snprintf(q, sizeof(q), "/v1/proof/consistency?from=%llu&to=%llu",
		 (unsigned long long)n_old, (unsigned long long)n_new);
	if ((status = fetch(w, q, WITNESS_PROOF_MAX, &pj)) != 0)
		goto out;
	status = EXIT_NEGATIVE;
	p = lg_xmalloc(sizeof(*p));
	proof = json_loads(pj, 0, NULL);
	if (proof == NULL ||
	    proof_hashes(json_object_get(proof, "hashes"), p) != 0) {
		printf("corrupt: the server's consistency proof is malformed\n");
		goto out;
	}
	/* The roots are the signed ones, never the server's word. */
	if (merkle_verify_consistency(n_old, n_new, r_old, r_new, p) != 0) {
		printf("corrupt: the tree of size %llu does not extend the "
		       "kept one of size %llu (a rewritten log)\n",
		       (unsigned long long)n_new, (unsigned long long)n_old);
		goto out;
	}
	if ((status = keep(w, now)) == 0)
		printf("ok: tree size %llu extends %llu\n",
		       (unsigned long long)n_new, (unsigned long long)n_old);
out:
	fflush(stdout);
	json_decref(proof);
	free(p);
	free(pj);
	free(old);
	free(now);
	return status;
}

int cmd_witness(int argc, char **argv)
{
	const char *key = NULL, *token_file = NULL;
	uint64_t every = 0, count = 0;
	struct witness w = {0};
	const struct opt opts[] = {
		{"--server", OPT_STR, &w.url, "URL",
		 "the server (GET URL/v1/checkpoint)"},
		OPT_ALIAS("--url", OPT_STR, &w.url),
		{"--key", OPT_STR, &key, "FILE",
		 "the verifier key of its checkpoints' signer"},
		{"--state", OPT_STR, &w.state, "DIR",
		 "where the last checkpoint kept is (DIR/checkpoint)"},
		{"--token-file", OPT_STR, &token_file, "FILE",
		 "the first word of FILE is the bearer token"},
		{"--follow", OPT_U64, &every, "SECS",
		 "look again every SECS seconds"},
		{"--count", OPT_U64, &count, "N",
		 "with --follow: stop after N looks"},
	};
	const struct cmd_spec spec =
		CMD_SPEC("witness", witness_usage, opts, NULL);
	int status = opts_parse(&spec, argc, argv);

	if (status != OPTS_RUN)
		return opts_exit(status);
	if (w.url == NULL || key == NULL || w.state == NULL) {
		tool_error("witness: --server, --key and --state are required");
		return EXIT_USAGE;
	}
	if ((status = load_verifier("witness", key, &w.v)) != 0)
		return status;
	if (token_file != NULL) {
		char *t = read_text("witness", token_file, NULL);

		if (t == NULL || sscanf(t, "%511s", w.token) != 1) {
			free(t);
			tool_error("witness: %s: no token", token_file);
			return EXIT_USAGE;
		}
		free(t);
		w.have_token = true;
	}
	if (mkdir(w.state, 0700) != 0 && errno != EEXIST) {
		tool_error("witness: %s: %s", w.state, strerror(errno));
		return EXIT_USAGE;
	}
	for (uint64_t n = 1;; n++) {
		status = witness_once(&w);
		if (status == EXIT_NEGATIVE || every == 0 ||
		    (count != 0 && n >= count))
			return status;
		sleep((unsigned)every);
	}
}
