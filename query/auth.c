/*
 * Bearer tokens and roles. The token file is `TOKEN ROLE` per line; it is
 * refused when group or others may read or write it, because anyone who
 * can read it can act as every role in it.
 *
 * A lookup compares the presented token with every entry over the full
 * fixed width, so the time it takes says nothing about which entry
 * matched, how much of a token was right, or whether any matched.
 */
#include "query/query_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *const role_names[ROLE_MAX] = {
	[ROLE_NONE] = "none",		[ROLE_ADMIN] = "admin",
	[ROLE_ADMISSION] = "admission", [ROLE_AUDITOR] = "auditor",
	[ROLE_PEER] = "peer",		[ROLE_TENANT] = "tenant",
};

const char *query__role_name(enum role r)
{
	return r < ROLE_MAX ? role_names[r] : "none";
}

int query__role_parse(const char *s, size_t len, struct principal *p,
		      struct lg_error *err)
{
	static const char tprefix[] = "tenant:";
	const size_t tlen = sizeof(tprefix) - 1;

	memset(p, 0, sizeof(*p));
	for (int r = ROLE_ADMIN; r < ROLE_TENANT; r++) {
		if (strlen(role_names[r]) == len &&
		    memcmp(role_names[r], s, len) == 0) {
			p->role = (enum role)r;
			return 0;
		}
	}
	if (len > tlen && len - tlen <= DNS1123_LABEL_MAX &&
	    memcmp(s, tprefix, tlen) == 0) {
		memcpy(p->ns, s + tlen, len - tlen);
		p->ns[len - tlen] = '\0';
		/* A scope must be a tenant that the name rule can place in
		 * the tree, or "its subtree" would mean nothing. */
		if (dns1123_label(p->ns, len - tlen) && ns_is_tenant(p->ns)) {
			p->role = ROLE_TENANT;
			return 0;
		}
	}
	return lg_error_set(err, LG_EINVAL,
			    "unknown role \"%.*s\" (admin, admission, auditor, "
			    "peer or tenant:<tenant namespace>)",
			    (int)(len > 80 ? 80 : len), s);
}

static bool is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\r';
}

/* Splits one line into its two words; false when it has not exactly two. */
static bool two_words(const char *l, size_t len, const char **w1, size_t *n1,
		      const char **w2, size_t *n2)
{
	size_t i = 0, start;

	while (i < len && is_space(l[i]))
		i++;
	start = i;
	while (i < len && !is_space(l[i]))
		i++;
	*w1 = l + start;
	*n1 = i - start;
	while (i < len && is_space(l[i]))
		i++;
	start = i;
	while (i < len && !is_space(l[i]))
		i++;
	*w2 = l + start;
	*n2 = i - start;
	while (i < len && is_space(l[i]))
		i++;
	return *n1 > 0 && *n2 > 0 && i == len;
}

static int auth_line(struct auth *a, const char *l, size_t len, unsigned lineno,
		     struct lg_error *err)
{
	const char *tok, *role;
	size_t ntok, nrole;
	struct auth_entry *e;
	struct lg_error why = {0};
	bool cert = false;

	if (!two_words(l, len, &tok, &ntok, &role, &nrole))
		return lg_error_set(err, LG_EINVAL,
				    "token file line %u: want \"TOKEN ROLE\"",
				    lineno);
	/* `cert:<CN> ROLE` gives a verified client certificate a role; the
	 * CN is not a secret, so it has no minimum length. */
	if (ntok > 5 && memcmp(tok, "cert:", 5) == 0) {
		tok += 5;
		ntok -= 5;
		cert = true;
	} else if (ntok < 16 || ntok > AUTH_TOKEN_MAX)
		return lg_error_set(err, LG_EINVAL,
				    "token file line %u: a token must have "
				    "16 to %d bytes",
				    lineno, AUTH_TOKEN_MAX);
	if (a->n == AUTH_TOKENS_MAX)
		return lg_error_set(err, LG_ELIMIT,
				    "token file: more than %d tokens",
				    AUTH_TOKENS_MAX);
	e = &a->e[a->n];
	memset(e, 0, sizeof(*e));
	if (query__role_parse(role, nrole, &e->who, &why) != 0)
		return lg_error_set(err, LG_EINVAL, "token file line %u: %s",
				    lineno, why.msg);
	if (cert && ntok >= TLS_CN_MAX)
		return lg_error_set(err, LG_EINVAL,
				    "token file line %u: a certificate CN "
				    "must have fewer than %d bytes",
				    lineno, TLS_CN_MAX);
	for (size_t i = 0; i < a->n; i++)
		if (a->e[i].cert == cert && a->e[i].len == ntok &&
		    memcmp(a->e[i].token, tok, ntok) == 0)
			return lg_error_set(err, LG_EEXIST,
					    "token file line %u: the token "
					    "is given twice",
					    lineno);
	memcpy(e->token, tok, ntok);
	e->len = ntok;
	e->cert = cert;
	a->n++;
	return 0;
}

int query__auth_parse(struct auth *a, const char *text, size_t len,
		      struct lg_error *err)
{
	unsigned lineno = 0;
	size_t i = 0;

	memset(a, 0, sizeof(*a));
	a->enabled = true;
	a->e = lg_xmalloc(AUTH_TOKENS_MAX * sizeof(*a->e));
	while (i < len) {
		const char *l = text + i, *nl = memchr(l, '\n', len - i);
		size_t ll = nl ? (size_t)(nl - l) : len - i, j = 0;
		int rc;

		i += ll + (nl != NULL);
		lineno++;
		while (j < ll && is_space(l[j]))
			j++;
		if (j == ll || l[j] == '#')
			continue;
		if (memchr(l, '\0', ll) != NULL)
			rc = lg_error_set(err, LG_EINVAL,
					  "token file line %u: NUL byte",
					  lineno);
		else
			rc = auth_line(a, l, ll, lineno, err);
		if (rc != 0) {
			query__auth_release(a);
			return rc;
		}
	}
	if (a->n == 0) {
		query__auth_release(a);
		return lg_error_set(err, LG_EINVAL, "token file: no tokens");
	}
	return 0;
}

static int read_all(int fd, char *buf, size_t cap, size_t *len)
{
	size_t n = 0;

	for (;;) {
		ssize_t r = read(fd, buf + n, cap - n);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -errno;
		if (r == 0)
			break;
		n += (size_t)r;
		if (n == cap)
			return -EFBIG;
	}
	*len = n;
	return 0;
}

int query__auth_load(struct auth *a, const char *path, struct lg_error *err)
{
	struct stat sb;
	char *buf = NULL;
	size_t len = 0;
	int fd, rc;

	memset(a, 0, sizeof(*a));
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return lg_error_set(err, LG_EIO, "token file %s: %s", path,
				    strerror(errno));
	if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
		close(fd);
		return lg_error_set(err, LG_EINVAL,
				    "token file %s: not a regular file", path);
	}
	if ((sb.st_mode & (S_IRWXG | S_IRWXO)) != 0) {
		close(fd);
		return lg_error_set(err, LG_EINVAL,
				    "token file %s: mode %03o lets others "
				    "read or change it (chmod 600)",
				    path, (unsigned)(sb.st_mode & 0777));
	}
	buf = lg_xmalloc(AUTH_FILE_MAX_BYTES);
	rc = read_all(fd, buf, AUTH_FILE_MAX_BYTES, &len);
	close(fd);
	if (rc != 0)
		rc = lg_error_set(err, rc == -EFBIG ? LG_ELIMIT : LG_EIO,
				  "token file %s: %s", path,
				  rc == -EFBIG ? "too large" : strerror(-rc));
	else
		rc = query__auth_parse(a, buf, len, err);
	/* The buffer held secrets. */
	memset(buf, 0, AUTH_FILE_MAX_BYTES);
	free(buf);
	return rc;
}

void query__auth_release(struct auth *a)
{
	if (a == NULL)
		return;
	if (a->e != NULL)
		memset(a->e, 0, AUTH_TOKENS_MAX * sizeof(*a->e));
	free(a->e);
	memset(a, 0, sizeof(*a));
}

/* The token of "Bearer TOKEN" (scheme case-insensitive), or false. */
static bool bearer(const char *hdr, size_t len, const char **tok, size_t *n)
{
	size_t i = 6;

	if (hdr == NULL || len < 7 || strncasecmp(hdr, "Bearer", 6) != 0 ||
	    (hdr[6] != ' ' && hdr[6] != '\t'))
		return false;
	while (i < len && (hdr[i] == ' ' || hdr[i] == '\t'))
		i++;
	while (len > i && (hdr[len - 1] == ' ' || hdr[len - 1] == '\t'))
		len--;
	*tok = hdr + i;
	*n = len - i;
	return *n > 0 && *n <= AUTH_TOKEN_MAX;
}

const struct principal *query__auth_lookup(const struct auth *a,
					   const char *hdr, size_t len)
{
	uint8_t given[AUTH_TOKEN_MAX] = {0};
	const char *tok;
	size_t n, found = SIZE_MAX;

	if (!bearer(hdr, len, &tok, &n))
		return NULL;
	memcpy(given, tok, n);
	for (size_t i = 0; i < a->n; i++) {
		unsigned diff = (unsigned)(a->e[i].len ^ n) | a->e[i].cert;

		for (size_t j = 0; j < AUTH_TOKEN_MAX; j++)
			diff |= a->e[i].token[j] ^ given[j];
		/* Branch-free select: mask is all ones when diff is 0. */
		size_t mask = (size_t)0 - (size_t)(diff == 0);

		found = (found & ~mask) | (i & mask);
	}
	return found == SIZE_MAX ? NULL : &a->e[found].who;
}

const struct principal *query__auth_lookup_cert(const struct auth *a,
						const char *cn)
{
	size_t n = strlen(cn);

	for (size_t i = 0; i < a->n; i++)
		if (a->e[i].cert && a->e[i].len == n &&
		    memcmp(a->e[i].token, cn, n) == 0)
			return &a->e[i].who;
	return NULL;
}

bool query__ns_in_subtree(const char *root, const char *ns)
{
	return ns_in_subtree(root, ns);
}
