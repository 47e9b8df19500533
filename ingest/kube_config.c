/*
 * Where the API server is and who we are to it, found the way kubectl finds
 * it: --kubeconfig, then $KUBECONFIG, then ~/.kube/config, then the
 * in-cluster service account. A kubeconfig is YAML, read with libyaml's
 * document loader; we look only at the paths we need, so aliases (which
 * the loader shares rather than copies) cannot make us walk without bound.
 * Errors name the file and line, because a kubeconfig is edited by hand.
 */
#include "ingest/kube_int.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <yaml.h>

#define SA_DIR_DEFAULT "/var/run/secrets/kubernetes.io/serviceaccount"
/* Entries of clusters/users/contexts we look through. */
#define NAMED_MAX 100000

/* The document being read, for lookups and error messages. */
struct kdoc {
	yaml_document_t doc;
	const char *what; /* the file name, or "kubeconfig" */
	const char *dir;  /* resolves relative file names; NULL: as given */
};

void kube_config_release(struct kube_config *c)
{
	if (c == NULL)
		return;
	free(c->server);
	free(c->context);
	free(c->ca_file);
	free(c->ca_data);
	free(c->cert_file);
	free(c->cert_data);
	free(c->key_file);
	free(c->key_data);
	free(c->token);
	free(c->token_file);
	memset(c, 0, sizeof(*c));
}

static unsigned long line_of(const yaml_node_t *n)
{
	return n ? (unsigned long)n->start_mark.line + 1 : 0;
}

/* The value of key in a mapping node; NULL when absent (or n is no map). */
static yaml_node_t *map_get(struct kdoc *d, yaml_node_t *n, const char *key)
{
	yaml_node_pair_t *p;

	if (n == NULL || n->type != YAML_MAPPING_NODE)
		return NULL;
	for (p = n->data.mapping.pairs.start; p < n->data.mapping.pairs.top;
	     p++) {
		yaml_node_t *k = yaml_document_get_node(&d->doc, p->key);

		if (k && k->type == YAML_SCALAR_NODE &&
		    strcmp((const char *)k->data.scalar.value, key) == 0)
			return yaml_document_get_node(&d->doc, p->value);
	}
	return NULL;
}

/* YAML's spellings of null, which kubeconfig writers use for "unset". */
static bool is_null_scalar(const yaml_node_t *n)
{
	const char *v = (const char *)n->data.scalar.value;

	if (n->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
		return false;
	return v[0] == '\0' || strcmp(v, "~") == 0 || strcmp(v, "null") == 0 ||
	       strcmp(v, "Null") == 0 || strcmp(v, "NULL") == 0;
}

/* A string field of map n: *out NULL when absent or null; a mapping or a
 * sequence where a string belongs is an error. */
static int get_str(struct kdoc *d, yaml_node_t *n, const char *key,
		   const char **out, struct lg_error *err)
{
	yaml_node_t *v = map_get(d, n, key);

	*out = NULL;
	if (v == NULL)
		return 0;
	if (v->type != YAML_SCALAR_NODE)
		return lg_error_set(err, LG_EINVAL,
				    "%s:%lu: %s must be a string", d->what,
				    line_of(v), key);
	if (!is_null_scalar(v))
		*out = (const char *)v->data.scalar.value;
	return 0;
}

static int get_bool(struct kdoc *d, yaml_node_t *n, const char *key, bool *out,
		    struct lg_error *err)
{
	static const char *const yes[] = {"true", "True", "TRUE"};
	static const char *const no[] = {"false", "False", "FALSE"};
	const char *s;
	int rc = get_str(d, n, key, &s, err);

	*out = false;
	if (rc < 0 || s == NULL)
		return rc;
	for (size_t i = 0; i < 3; i++) {
		if (strcmp(s, yes[i]) == 0) {
			*out = true;
			return 0;
		}
		if (strcmp(s, no[i]) == 0)
			return 0;
	}
	return lg_error_set(err, LG_EINVAL, "%s:%lu: %s must be true or false",
			    d->what, line_of(map_get(d, n, key)), key);
}

/* The `inner` mapping of the entry named name in the list `list` of the
 * root (clusters/cluster, users/user, contexts/context). */
static int find_named(struct kdoc *d, const char *list, const char *inner,
		      const char *name, yaml_node_t **out, struct lg_error *err)
{
	yaml_node_t *root = yaml_document_get_root_node(&d->doc);
	yaml_node_t *seq = map_get(d, root, list);
	yaml_node_item_t *it;
	size_t i = 0;

	*out = NULL;
	if (seq != NULL && seq->type != YAML_SEQUENCE_NODE &&
	    !(seq->type == YAML_SCALAR_NODE && is_null_scalar(seq)))
		return lg_error_set(err, LG_EINVAL, "%s:%lu: %s must be a list",
				    d->what, line_of(seq), list);
	if (seq == NULL || seq->type != YAML_SEQUENCE_NODE)
		goto missing;
	for (it = seq->data.sequence.items.start;
	     it < seq->data.sequence.items.top && i < NAMED_MAX; it++, i++) {
		yaml_node_t *e = yaml_document_get_node(&d->doc, *it);
		const char *n;
		int rc;

		if (e == NULL || e->type != YAML_MAPPING_NODE)
			return lg_error_set(err, LG_EINVAL,
					    "%s:%lu: an entry of %s must be a "
					    "mapping",
					    d->what, line_of(e), list);
		rc = get_str(d, e, "name", &n, err);
		if (rc < 0)
			return rc;
		if (n == NULL || strcmp(n, name) != 0)
			continue;
		*out = map_get(d, e, inner);
		if (*out == NULL || (*out)->type != YAML_MAPPING_NODE)
			return lg_error_set(err, LG_EINVAL,
					    "%s:%lu: %s \"%s\" has no %s "
					    "mapping",
					    d->what, line_of(e), list, name,
					    inner);
		return 0;
	}
missing:
	return lg_error_set(err, LG_ENOENT, "%s: no %s named \"%s\"", d->what,
			    inner, name);
}

/* ---------------------------------------------------------------------- */

/* Returns 0 (memory runs out by aborting): an int so that it chains with
 * the readers that can fail. */
static int dup_into(char **dst, const char *s, size_t len, struct lg_error *err)
{
	char *p = lg_xmalloc(len + 1);

	memcpy(p, s, len);
	p[len] = '\0';
	*dst = p;
	return 0;
}

/* A file name of the kubeconfig, made absolute against its directory. */
static int set_path(struct kdoc *d, char **dst, const char *s,
		    struct lg_error *err)
{
	size_t n;
	char *p;

	if (s == NULL)
		return 0;
	if (s[0] == '/' || d->dir == NULL || d->dir[0] == '\0')
		return dup_into(dst, s, strlen(s), err);
	n = strlen(d->dir) + strlen(s) + 2;
	p = lg_xmalloc(n);
	snprintf(p, n, "%s/%s", d->dir, s);
	*dst = p;
	return 0;
}

static int b64_value(unsigned char ch)
{
	if (ch >= 'A' && ch <= 'Z')
		return ch - 'A';
	if (ch >= 'a' && ch <= 'z')
		return ch - 'a' + 26;
	if (ch >= '0' && ch <= '9')
		return ch - '0' + 52;
	if (ch == '+')
		return 62;
	if (ch == '/')
		return 63;
	return -1;
}

/* Standard base64 with optional padding; whitespace is ignored (YAML
 * folds long values). Returns false on any other byte or a bad length. */
static bool b64_decode(const char *s, char *out, size_t *out_len)
{
	uint32_t acc = 0;
	size_t n = 0, bits = 0, pad = 0;

	for (; *s; s++) {
		unsigned char ch = (unsigned char)*s;
		int v;

		if (isspace(ch))
			continue;
		if (ch == '=') {
			pad++;
			continue;
		}
		v = b64_value(ch);
		if (v < 0 || pad > 0)
			return false;
		acc = (acc << 6) | (uint32_t)v;
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			out[n++] = (char)((acc >> bits) & 0xff);
		}
	}
	/* Leftover bits must be a valid tail: 2 or 4 bits, all zero-padded,
	 * and padding, when given, must complete the quantum. */
	if (bits >= 6 || pad > 2 || (pad > 0 && (bits / 2) != pad))
		return false;
	*out_len = n;
	return true;
}

/* An inline *-data field: base64 of PEM bytes. */
static int set_data(struct kdoc *d, yaml_node_t *m, const char *key, char **dst,
		    size_t *dst_len, struct lg_error *err)
{
	const char *s;
	char *buf;
	int rc = get_str(d, m, key, &s, err);

	if (rc < 0 || s == NULL)
		return rc;
	buf = lg_xmalloc(strlen(s) / 4 * 3 + 4);
	if (!b64_decode(s, buf, dst_len)) {
		free(buf);
		return lg_error_set(err, LG_EINVAL, "%s:%lu: %s is not base64",
				    d->what, line_of(map_get(d, m, key)), key);
	}
	buf[*dst_len] = '\0';
	*dst = buf;
	return 0;
}

/* ---------------------------------------------------------------------- */

static int read_cluster(struct kdoc *d, yaml_node_t *cl, const char *name,
			struct kube_config *c, struct lg_error *err)
{
	const char *server, *ca;
	size_t n;
	int rc;

	if ((rc = get_str(d, cl, "server", &server, err)) < 0)
		return rc;
	if (server == NULL)
		return lg_error_set(err, LG_EINVAL,
				    "%s:%lu: cluster \"%s\" has no server",
				    d->what, line_of(cl), name);
	if (strncmp(server, "https://", 8) != 0 &&
	    strncmp(server, "http://", 7) != 0)
		return lg_error_set(err, LG_EINVAL,
				    "%s:%lu: cluster \"%s\": server \"%s\" is "
				    "not an http(s) URL",
				    d->what, line_of(cl), name, server);
	n = strlen(server);
	while (n > 0 && server[n - 1] == '/')
		n--;
	if ((rc = dup_into(&c->server, server, n, err)) < 0)
		return rc;
	if ((rc = get_str(d, cl, "certificate-authority", &ca, err)) < 0 ||
	    (rc = set_path(d, &c->ca_file, ca, err)) < 0)
		return rc;
	if ((rc = set_data(d, cl, "certificate-authority-data", &c->ca_data,
			   &c->ca_data_len, err)) < 0)
		return rc;
	return get_bool(d, cl, "insecure-skip-tls-verify", &c->insecure, err);
}

/* Credential plugins run programs; we do not, and say so rather than
 * connect anonymously and fail later with a puzzling 401. */
static const char *const unsupported_user_fields[] = {"exec", "auth-provider"};

static int read_user(struct kdoc *d, yaml_node_t *u, const char *name,
		     struct kube_config *c, struct lg_error *err)
{
	const char *s;
	int rc;

	for (size_t i = 0; i < 2; i++)
		if (map_get(d, u, unsupported_user_fields[i]) != NULL)
			return lg_error_set(err, LG_EINVAL,
					    "%s:%lu: user \"%s\": %s "
					    "credentials are not supported",
					    d->what, line_of(u), name,
					    unsupported_user_fields[i]);
	if ((rc = get_str(d, u, "client-certificate", &s, err)) < 0 ||
	    (rc = set_path(d, &c->cert_file, s, err)) < 0 ||
	    (rc = get_str(d, u, "client-key", &s, err)) < 0 ||
	    (rc = set_path(d, &c->key_file, s, err)) < 0 ||
	    (rc = get_str(d, u, "tokenFile", &s, err)) < 0 ||
	    (rc = set_path(d, &c->token_file, s, err)) < 0 ||
	    (rc = get_str(d, u, "token", &s, err)) < 0)
		return rc;
	if (s != NULL && (rc = dup_into(&c->token, s, strlen(s), err)) < 0)
		return rc;
	if ((rc = set_data(d, u, "client-certificate-data", &c->cert_data,
			   &c->cert_data_len, err)) < 0 ||
	    (rc = set_data(d, u, "client-key-data", &c->key_data,
			   &c->key_data_len, err)) < 0)
		return rc;
	if ((c->cert_file || c->cert_data) != (c->key_file || c->key_data))
		return lg_error_set(err, LG_EINVAL,
				    "%s:%lu: user \"%s\": a client certificate "
				    "needs a client key and the other way "
				    "round",
				    d->what, line_of(u), name);
	return 0;
}

/* The context's cluster and user, from the loaded document. */
static int read_doc(struct kdoc *d, const char *context, struct kube_config *c,
		    struct lg_error *err)
{
	yaml_node_t *root = yaml_document_get_root_node(&d->doc);
	yaml_node_t *ctx, *cl, *u = NULL;
	const char *cluster, *user;
	int rc;

	if (root == NULL)
		return lg_error_set(err, LG_EINVAL, "%s: empty kubeconfig",
				    d->what);
	if (root->type != YAML_MAPPING_NODE)
		return lg_error_set(err, LG_EINVAL,
				    "%s:%lu: a kubeconfig must be a mapping",
				    d->what, line_of(root));
	if (context == NULL &&
	    (rc = get_str(d, root, "current-context", &context, err)) < 0)
		return rc;
	if (context == NULL)
		return lg_error_set(err, LG_EINVAL,
				    "%s: no current-context; name one with "
				    "--context",
				    d->what);
	if ((rc = find_named(d, "contexts", "context", context, &ctx, err)) <
		    0 ||
	    (rc = dup_into(&c->context, context, strlen(context), err)) < 0 ||
	    (rc = get_str(d, ctx, "cluster", &cluster, err)) < 0 ||
	    (rc = get_str(d, ctx, "user", &user, err)) < 0)
		return rc;
	if (cluster == NULL)
		return lg_error_set(err, LG_EINVAL,
				    "%s:%lu: context \"%s\" has no cluster",
				    d->what, line_of(ctx), context);
	if ((rc = find_named(d, "clusters", "cluster", cluster, &cl, err)) <
		    0 ||
	    (rc = read_cluster(d, cl, cluster, c, err)) < 0)
		return rc;
	/* A context without a user connects anonymously, as kubectl does. */
	if (user != NULL &&
	    ((rc = find_named(d, "users", "user", user, &u, err)) < 0 ||
	     (rc = read_user(d, u, user, c, err)) < 0))
		return rc;
	return 0;
}

static int parse_named(struct kube_config *c, const char *yaml, size_t len,
		       const char *what, const char *dir, const char *context,
		       struct lg_error *err)
{
	yaml_parser_t parser;
	struct kdoc d = {.what = what, .dir = dir};
	int rc;

	memset(c, 0, sizeof(*c));
	if (!yaml_parser_initialize(&parser))
		return lg_error_set(err, LG_ENOMEM, "out of memory");
	yaml_parser_set_input_string(&parser, (const unsigned char *)yaml, len);
	if (!yaml_parser_load(&parser, &d.doc)) {
		rc = lg_error_set(err, LG_EINVAL, "%s:%lu:%lu: %s%s%s", what,
				  (unsigned long)parser.problem_mark.line + 1,
				  (unsigned long)parser.problem_mark.column + 1,
				  parser.problem ? parser.problem : "bad YAML",
				  parser.context ? " " : "",
				  parser.context ? parser.context : "");
		yaml_parser_delete(&parser);
		return rc;
	}
	rc = read_doc(&d, context, c, err);
	yaml_document_delete(&d.doc);
	yaml_parser_delete(&parser);
	if (rc < 0)
		kube_config_release(c);
	return rc;
}

int ingest__kube_config_parse(struct kube_config *c, const char *yaml,
			      size_t len, const char *dir, const char *context,
			      struct lg_error *err)
{
	return parse_named(c, yaml, len, "kubeconfig", dir, context, err);
}

/* ---------------------------------------------------------------------- */

/* Reads a whole small file into a NUL-terminated buffer (caller frees). */
static int slurp(const char *path, size_t max, char **out, size_t *out_len,
		 struct lg_error *err)
{
	FILE *f = fopen(path, "rb");
	char *buf;
	size_t n;

	*out = NULL;
	if (f == NULL)
		return lg_error_set(err, errno == ENOENT ? LG_ENOENT : LG_EIO,
				    "%s: %s", path, strerror(errno));
	buf = lg_xmalloc(max + 1);
	n = fread(buf, 1, max + 1, f);
	if (ferror(f) || n > max) {
		bool big = !ferror(f);

		fclose(f);
		free(buf);
		return big ? lg_error_set(err, LG_ELIMIT,
					  "%s: larger than %zu bytes", path,
					  max)
			   : lg_error_set(err, LG_EIO, "%s: read error", path);
	}
	fclose(f);
	buf[n] = '\0';
	*out = buf;
	*out_len = n;
	return 0;
}

static int load_file(struct kube_config *c, const char *path,
		     const char *context, struct lg_error *err)
{
	char *text, *dir;
	size_t len;
	char *slash;
	int rc = slurp(path, KUBE_CONFIG_MAX_BYTES, &text, &len, err);

	if (rc < 0)
		return rc;
	dir = lg_xstrdup(path);
	slash = strrchr(dir, '/');
	if (slash == NULL)
		dir[0] = '\0';
	else
		slash[slash == dir ? 1 : 0] = '\0';
	rc = parse_named(c, text, len, path, dir, context, err);
	free(dir);
	free(text);
	return rc;
}

static bool file_exists(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0;
}

int ingest__kube_config_in_cluster(struct kube_config *c, const char *sa_dir,
				   struct lg_error *err)
{
	const char *host = getenv("KUBERNETES_SERVICE_HOST");
	const char *port = getenv("KUBERNETES_SERVICE_PORT");
	char buf[PATH_MAX];
	bool v6;
	int rc;

	memset(c, 0, sizeof(*c));
	if (sa_dir == NULL)
		sa_dir = SA_DIR_DEFAULT;
	if (host == NULL || host[0] == '\0' || port == NULL || port[0] == '\0')
		return lg_error_set(err, LG_ENOENT,
				    "no kubeconfig found and not in a cluster "
				    "(KUBERNETES_SERVICE_HOST/PORT unset)");
	v6 = strchr(host, ':') != NULL;
	snprintf(buf, sizeof(buf), "https://%s%s%s:%s", v6 ? "[" : "", host,
		 v6 ? "]" : "", port);
	if ((rc = dup_into(&c->server, buf, strlen(buf), err)) < 0)
		goto out;
	snprintf(buf, sizeof(buf), "%s/token", sa_dir);
	if (!file_exists(buf)) {
		rc = lg_error_set(err, LG_ENOENT,
				  "in cluster, but no service-account token "
				  "at %s",
				  buf);
		goto out;
	}
	if ((rc = dup_into(&c->token_file, buf, strlen(buf), err)) < 0)
		goto out;
	snprintf(buf, sizeof(buf), "%s/ca.crt", sa_dir);
	if (file_exists(buf) &&
	    (rc = dup_into(&c->ca_file, buf, strlen(buf), err)) < 0)
		goto out;
	c->in_cluster = true;
out:
	if (rc < 0)
		kube_config_release(c);
	return rc;
}

int kube_config_load(struct kube_config *c, const char *kubeconfig_path,
		     const char *context, struct lg_error *err)
{
	const char *env = getenv("KUBECONFIG");
	const char *home = getenv("HOME");
	char path[PATH_MAX];

	LG_ASSERT(c != NULL);
	memset(c, 0, sizeof(*c));
	if (kubeconfig_path != NULL)
		return load_file(c, kubeconfig_path, context, err);
	if (env != NULL && env[0] != '\0') {
		/* kubectl merges a list; we take its first file that
		 * exists, which is where kubectl writes too. */
		const char *p = env;

		for (size_t i = 0; *p && i < 64; i++) {
			size_t n = strcspn(p, ":");

			if (n > 0 && n < sizeof(path)) {
				memcpy(path, p, n);
				path[n] = '\0';
				if (file_exists(path))
					return load_file(c, path, context, err);
			}
			p += n;
			if (*p == ':')
				p++;
		}
	}
	if (home != NULL && home[0] != '\0') {
		snprintf(path, sizeof(path), "%s/.kube/config", home);
		if (file_exists(path))
			return load_file(c, path, context, err);
	}
	if (context != NULL)
		return lg_error_set(err, LG_ENOENT,
				    "--context %s given, but no kubeconfig "
				    "found",
				    context);
	return ingest__kube_config_in_cluster(c, NULL, err);
}

int ingest__kube_config_token(const struct kube_config *c, char **out,
			      struct lg_error *err)
{
	char *text;
	size_t len, start = 0;
	int rc;

	*out = NULL;
	if (c->token != NULL)
		return dup_into(out, c->token, strlen(c->token), err);
	if (c->token_file == NULL)
		return 0;
	rc = slurp(c->token_file, KUBE_TOKEN_MAX_BYTES, &text, &len, err);
	if (rc < 0)
		return rc;
	while (start < len && isspace((unsigned char)text[start]))
		start++;
	while (len > start && isspace((unsigned char)text[len - 1]))
		len--;
	if (len > start)
		rc = dup_into(out, text + start, len - start, err);
	free(text);
	return rc;
}
