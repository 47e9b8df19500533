/*
 * Transparency on the command line (DESIGN 4.4): keygen, head, prove,
 * check-proof, and the signing and checkpoint checks that checkpoint and
 * verify share. Notes and proofs use the C2SP formats, so other tools can
 * check what these print.
 */
#include "tools/tools.h"

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
	buf = malloc(TLOG_FILE_MAX + 1);
	n = buf ? fread(buf, 1, TLOG_FILE_MAX + 1, f) : 0;
	if (f_in == NULL)
		fclose(f);
	if (buf == NULL || n > TLOG_FILE_MAX) {
		tool_error("%s: %s: larger than %u bytes", cmd, path,
			   TLOG_FILE_MAX);
		free(buf);
		return NULL;
	}
	buf[n] = '\0';
	return buf;
}

int tlog_load_signer(const char *cmd, const char *path, struct note_signer *s)
{
	struct lg_error err = {0};
	char *t = read_text(cmd, path, NULL);
	int rc = t ? note_signer_parse(s, t, &err) : LG_EIO;

	if (t != NULL && rc != 0)
		tool_error("%s: %s: %s", cmd, path, err.msg);
	free(t);
	return rc ? EXIT_USAGE : 0;
}

static int load_verifier(const char *cmd, const char *path,
			 struct note_verifier *v)
{
	struct lg_error err = {0};
	char *t = read_text(cmd, path, NULL);
	int rc = t ? note_verifier_parse(v, t, &err) : LG_EIO;

	if (t != NULL && rc != 0)
		tool_error("%s: %s: %s", cmd, path, err.msg);
	free(t);
	return rc ? EXIT_USAGE : 0;
}

int tlog_sign_now(ledger_t *lg, const struct note_signer *s, uint64_t *size,
		  struct lg_error *err)
{
	uint8_t root[MERKLE_HASH_BYTES];
	char *body, *note;
	int rc;

	*size = ledger_last_seq(lg);
	if ((rc = ledger_tree_root(lg, *size, root, err)) != 0)
		return rc;
	body = tlog_checkpoint_text(s->name, *size, root);
	note = note_sign(s, body);
	free(body);
	if (note == NULL)
		return lg_error_set(err, LG_EINVAL, "cannot sign");
	rc = ledger_note_put(lg, *size, note, err);
	free(note);
	return rc;
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
	const struct opt opts[] = {{"--name", OPT_STR, &name},
				   {"--out", OPT_STR, &out}};
	const struct cmd_spec spec = {"keygen", keygen_usage, opts, 2};
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
	const struct opt opts[] = {{"--db", OPT_STR, &db},
				   {"--size", OPT_U64, &size}};
	const struct cmd_spec spec = {"head", head_usage, opts, 2};
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
	"  tlog-proof@v1 (needs a signed checkpoint of size M).\n";

static json_t *hashes_json(const struct merkle_proof *p)
{
	json_t *a = json_array();

	for (size_t i = 0; i < p->n; i++) {
		char b[48];

		note_b64_encode(p->hash[i], MERKLE_HASH_BYTES, b);
		json_array_append_new(a, json_string(b));
	}
	return a;
}

static int event_text(void *ctx, const struct event *ev, const uint8_t *head)
{
	*(char **)ctx = event_jcs(ev);
	return 1;
}

json_t *tlog_inclusion_json(ledger_t *lg, uint64_t seq, uint64_t size,
			    struct lg_error *err)
{
	struct merkle_proof *p = malloc(sizeof(*p));
	char *ev = NULL, *note = NULL;
	json_t *o = NULL, *event;

	if (p == NULL || ledger_prove_inclusion(lg, seq, size, p, err) != 0 ||
	    ledger_scan(lg, seq, 1, event_text, &ev, err) < 0 || ev == NULL)
		goto out;
	event = json_loads(ev, 0, NULL);
	o = json_pack("{s:s,s:I,s:I,s:o,s:o}", "type", "inclusion", "seq",
		      (json_int_t)seq, "treeSize", (json_int_t)size, "hashes",
		      hashes_json(p), "event", event ? event : json_null());
	if (ledger_note_get(lg, size, &note, NULL, NULL) == 0)
		json_object_set_new(o, "checkpoint", json_string(note));
out:
	free(note);
	free(ev);
	free(p);
	return o;
}

json_t *tlog_consistency_json(ledger_t *lg, uint64_t from, uint64_t to,
			      struct lg_error *err)
{
	struct merkle_proof *p = malloc(sizeof(*p));
	char *note = NULL;
	json_t *o = NULL;

	if (p == NULL || ledger_prove_consistency(lg, from, to, p, err) != 0)
		goto out;
	o = json_pack("{s:s,s:I,s:I,s:o}", "type", "consistency", "from",
		      (json_int_t)from, "treeSize", (json_int_t)to, "hashes",
		      hashes_json(p));
	if (ledger_note_get(lg, to, &note, NULL, NULL) == 0)
		json_object_set_new(o, "checkpoint", json_string(note));
	free(note);
	note = NULL;
	if (ledger_note_get(lg, from, &note, NULL, NULL) == 0)
		json_object_set_new(o, "oldCheckpoint", json_string(note));
out:
	free(note);
	free(p);
	return o;
}

/* C2SP tlog-proof@v1: the header line, the leaf index, the hashes one a
 * line, a blank line, the signed checkpoint. */
static int print_c2sp(const json_t *proof)
{
	const json_t *h = json_object_get(proof, "hashes"), *v;
	const char *cp = json_string_value(json_object_get(proof, "checkpoint"));
	size_t i;

	if (cp == NULL) {
		tool_error("prove: no signed checkpoint of that size (sign one "
			   "with `gpuledger checkpoint --sign-key`)");
		return EXIT_USAGE;
	}
	printf("c2sp.org/tlog-proof@v1\nindex %lld\n",
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
		{"--db", OPT_STR, &db},	     {"--seq", OPT_U64, &seq},
		{"--size", OPT_U64, &size},  {"--from", OPT_U64, &from},
		{"--to", OPT_U64, &to},	     {"--format", OPT_STR, &format},
	};
	const struct cmd_spec spec = {"prove", prove_usage, opts, 6};
	struct lg_error err = {0};
	ledger_t *lg;
	json_t *proof;
	char *text, *note;
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
	if (seq != 0 && size == 0) {
		if (ledger_note_get(lg, 0, &note, &size, NULL) == 0)
			free(note);
		if (size < seq)
			size = ledger_last_seq(lg);
	}
	if (seq == 0 && to == 0)
		to = ledger_last_seq(lg);
	proof = seq ? tlog_inclusion_json(lg, seq, size, &err)
		    : tlog_consistency_json(lg, from, to, &err);
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
	return s ? tool_strdup(s) : NULL;
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
	const struct opt opts[] = {{"--key", OPT_STR, &key},
				   {"--checkpoint", OPT_STR, &cpf},
				   {"--old-checkpoint", OPT_STR, &oldf}};
	const struct cmd_spec spec = {"check-proof", check_proof_usage, opts,
				      3};
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
	p = malloc(sizeof(*p));
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

int tlog_verify_checkpoint(ledger_t *lg, const char *file, const char *key)
{
	struct note_verifier v;
	struct lg_error err = {0};
	uint8_t root[MERKLE_HASH_BYTES], mine[MERKLE_HASH_BYTES];
	uint64_t size, last = ledger_last_seq(lg);
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
